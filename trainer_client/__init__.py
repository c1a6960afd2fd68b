"""The trainer side: reward clients (sync and asyncio) and, later, GRPO/PPO training.

    from trainer_client import RewardClient
    with RewardClient("localhost:50051") as client:
        results = client.score([{"id": "a", "task": "gsm8k", "completion": "#### 4", "reference": "4"}])

The clients live in :mod:`reward_core.clients` (one per service); the reward service's are
re-exported here, the names trainers import.
"""

from reward_core.channel_config import ChannelConfig
from reward_core.channel_security import ClientSecurity
from reward_core.clients import AsyncRewardClient, GroupResult, RewardClient

__all__ = ["RewardClient", "AsyncRewardClient", "GroupResult", "ChannelConfig", "ClientSecurity"]
