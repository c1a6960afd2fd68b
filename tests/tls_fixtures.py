"""A throwaway PKI for TLS tests: a self-signed CA, a server certificate for 127.0.0.1/localhost
and a client certificate (mutual TLS), written by the ``openssl`` command (P-256 keys, one day)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _signed(name: str, subject: str, extensions: str, out: Path) -> None:
    (out / f"{name}.ext").write_text(extensions)
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=out)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "2",
             "-days", "1", "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=out)


def make_test_pki(out: Path) -> Pki:
    """Writes ca.pem, server.pem/.key (SAN localhost and 127.0.0.1) and client.pem/.key into ``out``."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    out.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-sha256", "-subj", "/CN=reward-suite test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=out)
    _signed("server", "/CN=localhost",
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n", out)
    _signed("client", "/CN=test-trainer", "extendedKeyUsage=clientAuth\n", out)
    return Pki(out / "ca.pem", out / "server.pem", out / "server.key", out / "client.pem", out / "client.key")
