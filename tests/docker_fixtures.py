"""Session fixtures for the sandbox's Docker backend: a running engine and the runner image.

The engine is started if none answers (``scripts/system_setup.sh``: installs
docker.io when root and missing, starts ``dockerd`` in the background and leaves
it running), the runner image of the ``SANDBOX_LANGUAGES`` set (default core) is built
once per machine (cached by tag; a fresh build is a debootstrap: one to three minutes for
core, ten to twelve for all; ``make test`` builds it before pytest starts). Without any way to get an engine the
tests skip with the reason, except under ``SANDBOX_REQUIRE_DOCKER=1`` (set by
``.ci/run``), where they fail: CI must run them for real.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SYSTEM_SETUP = REPO / "scripts" / "system_setup.sh"


def _engine_client():
    """A pinged client, starting (and if need be installing) the engine first; or the reason there is none."""
    try:
        import docker
        import docker.errors
    except ImportError:
        return None, "the Docker SDK is not installed (pip install -e '.[docker]', or `make setup`)"
    try:
        client = docker.from_env(timeout=120)
        client.ping()
        return client, ""
    except docker.errors.DockerException:
        pass
    proc = subprocess.run([str(SYSTEM_SETUP)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False, timeout=900)
    try:
        client = docker.from_env(timeout=120)
        client.ping()
        return client, ""
    except docker.errors.DockerException as exc:
        return None, (f"no Docker engine answers ({exc}) and {SYSTEM_SETUP.name} could not start one "
                      f"(exit {proc.returncode}): {proc.stdout.strip()[-800:]}")


def _unavailable(reason: str) -> None:
    if os.environ.get("SANDBOX_REQUIRE_DOCKER") == "1":
        pytest.fail(f"SANDBOX_REQUIRE_DOCKER=1 but the docker backend is unavailable: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_runner_image() -> str:
    """The runner image tag of the ``SANDBOX_LANGUAGES`` set, built if missing (once per machine)."""
    client, reason = _engine_client()
    if client is None:
        _unavailable(reason)
    from sandbox.docker_image import ImageBuildError, cleanup_containers, ensure_image

    cleanup_containers(client)   # leftovers of a crashed earlier run on this machine
    try:
        return ensure_image(client)
    except ImageBuildError as exc:
        _unavailable(f"cannot build the sandbox runner image: {exc}")
        raise


@pytest.fixture(scope="session")
def docker_executor(docker_runner_image):
    """A DockerExecutor with two warm containers, shared by the session; closed (containers removed) at the end."""
    from sandbox.factory import create_executor

    executor = create_executor(backend="docker", concurrency=2, image=docker_runner_image)
    yield executor
    executor.close()
