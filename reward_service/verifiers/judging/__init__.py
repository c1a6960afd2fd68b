"""LLM-judge verdicts as pure functions: prompt templates (shipped in ``templates/``), verdict parsers,
group pairing schedules, and the bias statistics (order agreement, flips, length-reward correlation).
They import nothing of ours and make no calls: the judge tasks (``reward_service/tasks/judge_*.py``) call
the judge."""

from reward_service.verifiers.judging.bias import (
    OrderPair,
    OrderStats,
    RunningPearson,
    combine_orders,
    order_stats,
    pearson,
)
from reward_service.verifiers.judging.pairing import SCHEDULES, Game, knockout, round_robin, seeded_order, win_rates
from reward_service.verifiers.judging.templates import InvalidTemplate, JudgeTemplate, builtin_names, load_template
from reward_service.verifiers.judging.verdicts import (
    PARSER_KINDS,
    InvalidParserSpec,
    ParserSpec,
    UnparseableVerdict,
    Verdict,
    build_parser,
    parse_verdict,
)

__all__ = [
    "OrderPair", "OrderStats", "RunningPearson", "combine_orders", "order_stats", "pearson",
    "SCHEDULES", "Game", "knockout", "round_robin", "seeded_order", "win_rates",
    "InvalidTemplate", "JudgeTemplate", "builtin_names", "load_template",
    "PARSER_KINDS", "InvalidParserSpec", "ParserSpec", "UnparseableVerdict", "Verdict", "build_parser",
    "parse_verdict",
]
