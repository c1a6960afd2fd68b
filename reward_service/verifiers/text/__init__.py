"""Short-answer and string verifiers: SQuAD exact match and token F1 over several golds, character
similarity (difflib ratio, InDel), and where an answer sits in a completion. Pure functions."""

from reward_service.verifiers.text.char_similarity import ALGORITHMS, indel_similarity, lcs_length, similarity
from reward_service.verifiers.text.spans import EXTRACT_MODES, extract_answer, last_boxed, strip_text_wrappers
from reward_service.verifiers.text.squad import best_over_golds, exact_match, normalize_answer, token_f1

__all__ = ["ALGORITHMS", "EXTRACT_MODES", "best_over_golds", "exact_match", "extract_answer", "indel_similarity",
           "last_boxed", "lcs_length", "normalize_answer", "similarity", "strip_text_wrappers", "token_f1"]
