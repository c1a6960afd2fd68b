"""ServerUnavailable says what happened in our words; gRPC's raw text stays in ``detail`` (issue 22)."""

from __future__ import annotations

import pytest

from reward_core.clients.errors import ServerUnavailable, unavailable_message

RAW_REFUSED = ("connections to all backends failing; last error: UNKNOWN: ipv4:127.0.0.1:50051: Failed to connect "
               "to remote host: connect: Connection refused (111)")


@pytest.mark.parametrize(("detail", "said"), [
    ("server is draining; retry on another replica", "it is draining (shutting down) and takes no new calls"),
    (RAW_REFUSED, "it no longer accepts connections (shutting down or shut down)"),
    ("Socket closed", "it went away (draining or shut down)"),
    ("", "it went away (draining or shut down)"),
])
def test_the_message_names_the_address_and_what_happened(detail, said):
    assert unavailable_message("10.0.0.7:50051", detail, "reward service") == (
        f"the reward service at 10.0.0.7:50051 is unavailable: {said}, and no other replica answered")


def test_the_raw_grpc_text_is_kept_in_detail_not_in_the_message():
    error = ServerUnavailable("127.0.0.1:50051", RAW_REFUSED, "reward service")
    assert error.detail == RAW_REFUSED
    assert "backends" not in str(error) and "ipv4" not in str(error)
    assert isinstance(error, ConnectionError) and error.endpoint == "127.0.0.1:50051"
