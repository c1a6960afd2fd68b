"""Server security without a server: the bind policy, config checks, the token check, Reload's root."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest

from reward_core.channel_security import TOKEN_ENV, TOKEN_FILE_ENV
from reward_core.grpc_common import RequestRejected
from reward_core.server_security import (
    ServerSecurityConfig,
    TokenAuthInterceptor,
    check_bind_policy,
    is_loopback,
    prepare,
)
from reward_service.rm.rm_servicer import checkpoint_under_root

UNPROTECTED = dict(tls=False, token=False, insecure=False)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"])
def test_loopback_hosts_are_loopback(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "", "192.168.1.20", "10.0.0.5"])
def test_wildcard_and_lan_hosts_are_not_loopback(host):
    assert not is_loopback(host)


def test_loopback_bind_needs_no_protection():
    check_bind_policy("127.0.0.1", **UNPROTECTED)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20"])
def test_unprotected_non_loopback_bind_is_refused_naming_the_three_ways_out(host):
    with pytest.raises(ValueError) as info:
        check_bind_policy(host, **UNPROTECTED)
    message = str(info.value)
    assert "--tls-cert" in message and "--auth-token-file" in message and "--insecure" in message
    assert TOKEN_ENV in message


@pytest.mark.parametrize("protection", ["tls", "token", "insecure"])
def test_any_one_protection_allows_a_non_loopback_bind(protection):
    check_bind_policy("0.0.0.0", **{**UNPROTECTED, protection: True})


def test_prepare_applies_the_policy_before_anything_binds():
    with pytest.raises(ValueError, match="refusing to listen on '0.0.0.0'"):
        prepare(ServerSecurityConfig(), "0.0.0.0", environ={})


def test_a_token_from_the_environment_counts_as_protection():
    security = prepare(ServerSecurityConfig(), "0.0.0.0", environ={TOKEN_ENV: "s3cret"})
    assert security.token == "s3cret" and "s3cret" not in repr(security)


def test_a_token_file_is_read_and_stripped(tmp_path):
    path = tmp_path / "token"
    path.write_text("s3cret\n")
    assert prepare(ServerSecurityConfig(auth_token_file=str(path)), "127.0.0.1", environ={}).token == "s3cret"
    assert prepare(ServerSecurityConfig(), "127.0.0.1", environ={TOKEN_FILE_ENV: str(path)}).token == "s3cret"


def test_an_empty_token_file_is_an_error_not_an_open_server(tmp_path):
    path = tmp_path / "token"
    path.write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        prepare(ServerSecurityConfig(auth_token_file=str(path)), "127.0.0.1", environ={})


def test_tls_cert_without_key_is_rejected():
    with pytest.raises(ValueError, match="--tls-key"):
        ServerSecurityConfig(tls_cert="server.pem")


def test_client_ca_without_a_server_cert_is_rejected():
    with pytest.raises(ValueError, match="--tls-client-ca"):
        ServerSecurityConfig(tls_client_ca="ca.pem")


def test_a_file_that_is_not_pem_is_named(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("not a certificate")
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    with pytest.raises(ValueError, match="--tls-cert .*cert.pem is not a PEM file"):
        prepare(ServerSecurityConfig(tls_cert=str(cert), tls_key=str(key)), "127.0.0.1", environ={})


# --- the token check, on a fake handler ---------------------------------------------------------------

def _intercept(method: str, metadata: tuple) -> tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]:
    """(what the interceptor returns, the method's own handler)."""
    original = grpc.unary_unary_rpc_method_handler(lambda request, context: "served")
    details = SimpleNamespace(method=method, invocation_metadata=metadata)
    return TokenAuthInterceptor("s3cret").intercept_service(lambda _: original, details), original


class _Aborted(Exception):
    pass


def _abort_message(handler: grpc.RpcMethodHandler) -> tuple[grpc.StatusCode, str]:
    def abort(code, message):
        raise _Aborted(code, message)

    with pytest.raises(_Aborted) as info:
        handler.unary_unary(None, SimpleNamespace(abort=abort))
    return info.value.args


@pytest.mark.parametrize("metadata", [(), (("authorization", "Bearer wrong"),), (("authorization", "s3cret"),),
                                      (("authorization", "Basic s3cret"),)])
def test_a_missing_or_wrong_token_is_unauthenticated_with_how_to_pass_it(metadata):
    handler, original = _intercept("/reward.v1.RewardService/Score", metadata)
    assert handler is not original
    code, message = _abort_message(handler)
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert "authorization: Bearer <token>" in message and "s3cret" not in message


def test_the_right_token_reaches_the_method():
    handler, original = _intercept("/reward.v1.RewardService/Score", (("authorization", "Bearer s3cret"),))
    assert handler is original


@pytest.mark.parametrize("method", ["/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch",
                                    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"])
def test_health_and_reflection_need_no_token(method):
    handler, original = _intercept(method, ())
    assert handler is original


# --- Reload's checkpoint root ---------------------------------------------------------------------

@pytest.fixture
def root(tmp_path) -> Path:
    (tmp_path / "root" / "step_100").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    return (tmp_path / "root").resolve()


def test_a_checkpoint_under_the_root_is_allowed(root):
    assert checkpoint_under_root(str(root / "step_100"), root) == root / "step_100"


@pytest.mark.parametrize("relative", ["../elsewhere", "step_100/../../elsewhere"])
def test_dot_dot_out_of_the_root_is_permission_denied(root, relative):
    with pytest.raises(RequestRejected) as info:
        checkpoint_under_root(str(root / relative), root)
    assert info.value.code == grpc.StatusCode.PERMISSION_DENIED and str(root) in str(info.value)


def test_a_symlink_inside_the_root_pointing_out_is_permission_denied(root):
    (root / "link").symlink_to(root.parent / "elsewhere")
    with pytest.raises(RequestRejected) as info:
        checkpoint_under_root(str(root / "link"), root)
    assert info.value.code == grpc.StatusCode.PERMISSION_DENIED


def test_a_sibling_whose_name_extends_the_root_is_outside_it(root):
    (root.parent / "root-evil").mkdir()
    with pytest.raises(RequestRejected):
        checkpoint_under_root(str(root.parent / "root-evil"), root)
