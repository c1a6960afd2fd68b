"""The ``ifbench`` task: IFBench's out-of-distribution constraints (allenai/IFBench), with IFEval's
25 instructions too (NeMo Gym's instruction_following rows mix both), scored like ``ifeval``.

The two IFBench ids not implemented (``reward_service.verifiers.instructions.ifbench.UNSUPPORTED``:
they need NLTK data no PyPI package ships) are answered ERROR, unscored: the reference is fine, the
verifier cannot check it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_service.tasks.ifeval_task import SELF_CHECK_CASES, IfevalTask
from reward_service.verifiers.instructions import IFBENCH_INSTRUCTIONS, IFEVAL_INSTRUCTIONS, UNSUPPORTED

#: IFBench's own tools at start-up: syllapy's syllables (cat 1, apple 2, dog 1), emoji's table, the word tokenizer.
IFBENCH_SELF_CHECK_CASES: tuple[tuple[Mapping[str, Any], str, float], ...] = (
    ({"instruction_id_list": ["words:odd_even_syllables"], "kwargs": [{}]}, "Cat apple dog.", 1.0),
    ({"instruction_id_list": ["words:odd_even_syllables"], "kwargs": [{}]}, "Cat dog apple.", 0.0),
    ({"instruction_id_list": ["format:emoji"], "kwargs": [{}]}, "It rains 🌧. We stay home 🏠.", 1.0),
    ({"instruction_id_list": ["format:emoji"], "kwargs": [{}]}, "It rains. We stay home 🏠.", 0.0),
    ({"instruction_id_list": ["words:words_position"], "kwargs": [{"keyword": "cat"}]}, "A cat saw a cat .", 1.0),
)


class IfbenchTask(IfevalTask):
    """IFBench (and IFEval) instructions, strict or loose, all-or-fraction: options as ``ifeval``'s.
    IFBench's paper reports prompt-level loose accuracy: the ``ifbench_loose`` variant."""

    name = "ifbench"
    description = ("IFBench instruction following: 1 when the response follows every IFBench/IFEval instruction of "
                   "reference.instruction_id_list/kwargs (strict; loose and fraction as options), one component each")
    instructions = {**IFEVAL_INSTRUCTIONS, **IFBENCH_INSTRUCTIONS}
    unsupported = UNSUPPORTED
    self_check_cases = SELF_CHECK_CASES + IFBENCH_SELF_CHECK_CASES
