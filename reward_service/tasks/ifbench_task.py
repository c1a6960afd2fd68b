"""The ``ifbench`` task: IFBench's out-of-distribution constraints (allenai/IFBench), with IFEval's
25 instructions too (NeMo Gym's instruction_following rows mix both), scored like ``ifeval``.

IFBench's ids not implemented yet (``reward_service.verifiers.instructions.ifbench.UNSUPPORTED``)
are answered ERROR, unscored: the reference is fine, the verifier cannot check it.
"""

from __future__ import annotations

from reward_service.tasks.ifeval_task import IfevalTask
from reward_service.verifiers.instructions import IFBENCH_INSTRUCTIONS, IFEVAL_INSTRUCTIONS, UNSUPPORTED


class IfbenchTask(IfevalTask):
    """IFBench (and IFEval) instructions, strict or loose, all-or-fraction: options as ``ifeval``'s.
    IFBench's paper reports prompt-level loose accuracy: the ``ifbench_loose`` variant."""

    name = "ifbench"
    description = ("IFBench instruction following: 1 when the response follows every IFBench/IFEval instruction of "
                   "reference.instruction_id_list/kwargs (strict; loose and fraction as options), one component each")
    instructions = {**IFEVAL_INSTRUCTIONS, **IFBENCH_INSTRUCTIONS}
    unsupported = UNSUPPORTED
