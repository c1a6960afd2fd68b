"""The client's channel settings: UNAVAILABLE-only retries, and TLS/token security."""

import json

import pytest

from reward_core.channel_config import ChannelConfig
from reward_core.channel_security import ClientSecurity


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


# --- client security (TLS, token) -------------------------------------------------------------

def test_no_security_environment_means_plaintext_without_a_token():
    security = ClientSecurity.from_env({})
    assert (security.uses_tls, security.auth_token) == (False, "")


def test_the_token_comes_from_the_environment_and_stays_out_of_repr():
    security = ClientSecurity.from_env({"REWARD_SUITE_AUTH_TOKEN": "s3cret", "REWARD_SUITE_TLS_CA": "ca.pem"})
    assert (security.auth_token, security.tls_ca, security.uses_tls) == ("s3cret", "ca.pem", True)
    assert "s3cret" not in repr(security) and "s3cret" not in repr(ChannelConfig(security=security))


def test_a_token_file_in_the_environment_wins_over_the_token(tmp_path):
    path = tmp_path / "token"
    path.write_text("from-file\n")
    env = {"REWARD_SUITE_AUTH_TOKEN": "from-env", "REWARD_SUITE_AUTH_TOKEN_FILE": str(path)}
    assert ClientSecurity.from_env(env).auth_token == "from-file"


def test_a_client_certificate_without_its_key_is_rejected():
    with pytest.raises(ValueError, match="--tls-client-key"):
        ClientSecurity(tls_ca="ca.pem", tls_client_cert="client.pem")


def test_a_client_certificate_without_tls_is_rejected():
    with pytest.raises(ValueError, match="need TLS"):
        ClientSecurity(tls_client_cert="client.pem", tls_client_key="client.key")
