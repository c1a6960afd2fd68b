"""reasoning-gym entries as references of ``rg:<dataset>``: which datasets exist, what a usable
reference is, and the answer extraction reasoning-gym itself uses. Pure: imports no reasoning-gym.

A reference is one of (``reference_entry`` turns each into the entry ``score_answer`` gets):

- ``{"entry": {"question": ..., "answer": ..., "metadata": {...}}}``: the entry as the dataset
  made it (what ``reward-service make-data`` writes);
- the entry's own fields at the top level (a NeMo Gym row that carries them flattened);
- a bare gold, ``{"answer": "<gold>"}`` or the gold string, for the datasets whose
  ``score_answer`` reads nothing but the answer (not those in :data:`NEEDS_METADATA`).

The tables here are facts about the pinned reasoning-gym (:data:`PINNED_VERSION`);
``tests/unit/test_rg_task.py`` recomputes each from the installed package, so a new pin that
changes one fails a test instead of scoring wrongly.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from importlib import metadata as importlib_metadata
from typing import Any

from reward_service.task_api import InvalidReference

#: The reasoning-gym release this suite is pinned to (pyproject.toml's ``rg`` extra).
PINNED_VERSION = "0.1.25"
DISTRIBUTION = "reasoning-gym"
#: Metadata keys ``make-data`` adds to each entry it writes (checked when present, never required).
VERSION_KEY = "reasoning_gym_version"
CONFIG_KEY = "dataset_config"

#: Every dataset of reasoning-gym 0.1.25 but ``composite`` (a mix: its entries name their own
#: dataset in ``metadata.source_dataset``; score each by ``rg:<that dataset>``).
DATASETS: tuple[str, ...] = (
    "ab", "acre", "advanced_geometry", "aiw", "arc_1d", "arc_agi", "base_conversion", "basic_arithmetic", "bf",
    "binary_alternation", "binary_matrix", "bitwise_arithmetic", "boxnet", "caesar_cipher", "calendar_arithmetic",
    "chain_sum", "circuit_logic", "codeio", "coin_flip", "color_cube_rotation", "complex_arithmetic", "count_bits",
    "count_primes", "countdown", "course_schedule", "cryptarithm", "decimal_arithmetic", "decimal_chain_sum", "dice",
    "emoji_mystery", "family_relationships", "figlet_font", "fraction_simplification", "futoshiki", "game_of_life",
    "game_of_life_halting", "gcd", "graph_color", "group_anagrams", "gsm_symbolic", "intermediate_integration",
    "isomorphic_strings", "jugs", "kakurasu", "knight_swap", "knights_knaves", "largest_island", "lcm",
    "leg_counting", "letter_counting", "letter_jumble", "list_functions", "mahjong_puzzle", "manipulate_matrix",
    "maze", "mini_sudoku", "modulo_grid", "n_queens", "needle_haystack", "number_filtering", "number_format",
    "number_sequence", "number_sorting", "palindrome_generation", "palindrome_partitioning", "path_star",
    "polynomial_equations", "polynomial_multiplication", "pool_matrix", "power_function", "prime_factorization",
    "products", "propositional_logic", "puzzle24", "quantum_lock", "ransom_note", "rearc", "rectangle_count",
    "rotate_matrix", "rotten_oranges", "rubiks_cube", "rush_hour", "self_reference", "sentence_reordering",
    "shortest_path", "simple_equations", "simple_geometry", "simple_integration", "sokoban", "spell_backward",
    "spiral_matrix", "string_insertion", "string_manipulation", "string_splitting", "string_synthesis", "sudoku",
    "survo", "syllogism", "time_intervals", "tower_of_hanoi", "tsumego", "word_ladder", "word_sequence_reversal",
    "word_sorting", "zebra_puzzles",
)

#: Datasets with no single gold: the entry's ``answer`` is None and ``score_answer`` checks a
#: proposed solution against the puzzle in the metadata (many answers are right).
GOLDLESS = frozenset({"boxnet", "graph_color", "propositional_logic", "rubiks_cube", "rush_hour"})

#: Datasets whose ``score_answer`` reads the entry's metadata (a bare gold raises KeyError or
#: scores the gold itself below 1): their reference must be the whole entry.
NEEDS_METADATA = GOLDLESS | frozenset({
    "advanced_geometry", "arc_agi", "bitwise_arithmetic", "calendar_arithmetic", "complex_arithmetic", "countdown",
    "cryptarithm", "fraction_simplification", "futoshiki", "group_anagrams", "intermediate_integration", "jugs",
    "kakurasu", "knight_swap", "mini_sudoku", "n_queens", "number_format", "number_sorting", "palindrome_generation",
    "palindrome_partitioning", "rearc", "simple_integration", "sokoban", "sudoku", "survo", "time_intervals",
    "tower_of_hanoi", "word_ladder", "word_sorting",
})

#: Datasets whose own ``score_answer`` cannot tell right from wrong in the pinned release. Scored
#: as reasoning-gym scores them (that is this family's contract), but named in ListTasks and
#: logged when a worker first scores one: do not train on them.
BROKEN_SCORERS: Mapping[str, str] = {
    "game_of_life_halting": "score_answer compares bool(answer) == bool(gold): every non-empty answer scores 1",
    "puzzle24": "score_answer checks that the expression makes 24 from four numbers in range, not that they are "
                "the puzzle's numbers: any 24-expression scores 1",
}

ANSWER_TAG = "answer"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)


@functools.lru_cache(maxsize=8)
def _tag_regex(tag: str) -> re.Pattern[str]:
    # reasoning_gym.utils.extract_answer's own pattern: one optional whitespace inside each tag.
    return re.compile(f"<{re.escape(tag)}>\\s?(.*?)\\s?</{re.escape(tag)}>", re.DOTALL)


def extract_answer(completion: str, tag: str = ANSWER_TAG, fallback_to_completion: bool = False) -> str | None:
    """The last ``<tag>...</tag>`` of the completion, stripped (reasoning-gym's ``extract_answer``).

    Without a tag (``tag=""``), or with ``fallback_to_completion`` when no tag is found: the
    whole completion after a leading ``<think>...</think>`` block, stripped. None: no answer.
    """
    if tag:
        matches = _tag_regex(tag).findall(completion)
        if matches:
            return matches[-1].strip()
        if not fallback_to_completion:
            return None
    answer = _THINK.sub("", completion, count=1).strip()
    return answer or None


@functools.lru_cache(maxsize=1)
def installed_version() -> str | None:
    """The installed reasoning-gym's version (None: not installed); read once per process."""
    try:
        return importlib_metadata.version(DISTRIBUTION)
    except importlib_metadata.PackageNotFoundError:
        return None


def _grid(value: Any) -> Any:
    """A JSON grid (lists of lists) back into the tuple of tuples ARC's ``parse_board`` returns."""
    if isinstance(value, list) and all(isinstance(row, list) for row in value):
        return tuple(tuple(row) for row in value)
    return value


def _arc_grids(metadata: dict[str, Any]) -> dict[str, Any]:
    return {**metadata, **{k: _grid(metadata[k]) for k in ("input", "output") if k in metadata}}


#: What JSON lost, put back: ARC grids were tuples (``score_answer`` compares a parsed tuple grid
#: with ``metadata["output"]``, and a list never equals a tuple).
_METADATA_DECODERS: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "arc_agi": _arc_grids, "rearc": _arc_grids,
}


def _raw_entry(reference: Mapping[str, Any], task: str) -> Mapping[str, Any]:
    if "entry" in reference:
        entry = reference["entry"]
        if not isinstance(entry, Mapping):
            raise InvalidReference(f"task {task!r}: reference 'entry' must be an object (a reasoning-gym entry: "
                                   f"question, answer, metadata), got {type(entry).__name__}")
        return entry
    return reference


def _answer(entry: Mapping[str, Any], dataset: str, task: str) -> str | None:
    answer = entry.get("answer")
    if answer is None:
        if dataset not in GOLDLESS:
            raise InvalidReference(f"task {task!r} needs the entry's gold 'answer' (reference {{'entry': "
                                   f"{{'question', 'answer', 'metadata'}}}} or {{'answer': <gold>}}); got none")
        return None
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
        raise InvalidReference(f"task {task!r}: the entry's 'answer' must be a string, got {type(answer).__name__}")
    return str(answer)


def _metadata(entry: Mapping[str, Any], dataset: str, task: str) -> dict[str, Any]:
    meta = entry.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, Mapping):
        raise InvalidReference(f"task {task!r}: the entry's 'metadata' must be an object, got {type(meta).__name__}")
    if not meta and dataset in NEEDS_METADATA:
        raise InvalidReference(f"task {task!r}: reasoning-gym's {dataset} scores from the entry's metadata; send "
                               f"the whole entry as the reference ({{'entry': {{...}}}}), not only its answer")
    source = meta.get("source_dataset")
    if source is not None and source != dataset:
        raise InvalidReference(f"task {task!r}: the entry was made by reasoning-gym's {source!r}; "
                               f"score it as 'rg:{source}'")
    version, installed = meta.get(VERSION_KEY), installed_version()
    if version is not None and installed is not None and str(version) != installed:
        raise InvalidReference(f"task {task!r}: the entry was made by reasoning-gym {version}, this server has "
                               f"{installed}: regenerate the data with this version (or serve that one)")
    if not isinstance(meta.get(CONFIG_KEY, {}), Mapping):
        raise InvalidReference(f"task {task!r}: metadata.{CONFIG_KEY} must be an object (the dataset's config)")
    return dict(meta)


def reference_entry(reference: Mapping[str, Any], dataset: str, task: str) -> dict[str, Any]:
    """The entry ``score_answer`` gets, from any accepted reference; InvalidReference when unusable."""
    entry = _raw_entry(reference, task)
    answer = _answer(entry, dataset, task)
    meta = _metadata(entry, dataset, task)
    decode = _METADATA_DECODERS.get(dataset)
    out = {"question": entry.get("question", ""), "answer": answer, "metadata": decode(meta) if decode else meta}
    return {**{k: v for k, v in entry.items() if k not in out}, **out}


def dataset_config(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The dataset config overrides an entry was generated with (``metadata.dataset_config``; {})."""
    return dict(entry.get("metadata", {}).get(CONFIG_KEY) or {})
