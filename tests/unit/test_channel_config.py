"""The client's service config retries UNAVAILABLE only."""

import json

import pytest

from trainer_client.channel_config import ChannelConfig


def test_retry_policy_retries_only_unavailable():
    config = json.loads(ChannelConfig().service_config())
    [method] = config["methodConfig"]
    assert method["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]
    assert method["name"] == [{"service": "reward.v1.RewardService"}]


def test_round_robin_is_the_default_load_balancing():
    assert json.loads(ChannelConfig().service_config())["loadBalancingConfig"] == [{"round_robin": {}}]


def test_more_than_five_attempts_is_rejected():
    with pytest.raises(ValueError, match="max_attempts"):
        ChannelConfig(max_attempts=9)
