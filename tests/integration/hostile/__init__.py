"""Hostile programs for the sandbox, as data: escape, exhaustion, persistence, harness gaming.

``PROGRAMS`` is what ``tests/integration/test_sandbox_hostile.py`` runs against every
backend; ``host_probe`` is what it checks on the host afterwards.
"""

from tests.integration.hostile import escape, exhaustion, gaming, interpreter, languages, legit, persistence
from tests.integration.hostile.model import Category, HostileProgram

PROGRAMS: list[HostileProgram] = (escape.PROGRAMS + exhaustion.PROGRAMS + persistence.PROGRAMS + gaming.PROGRAMS
                                  + interpreter.PROGRAMS + languages.PROGRAMS)
#: Correct programs no defence may fail (legit.py), the other languages' among them.
LEGIT_PROGRAMS: list[legit.LegitProgram] = legit.PROGRAMS + languages.LEGIT

__all__ = ["LEGIT_PROGRAMS", "PROGRAMS", "Category", "HostileProgram"]
