"""Build the Docker backend's runner image on this machine: no registry needed.

No image registry is reachable from where this runs (CI, air-gapped reward
nodes), so the image is made here from Debian's package mirror, the one
network source every machine in the project already uses for apt:

1. **base** ``reward-sandbox-base:<hash of the recipe>`` -- ``debootstrap
   --variant=minbase --include=python3,g++`` a Debian root filesystem (the mirror
   is read from the host's apt sources), prune docs and caches, ``docker import``
   it. 1.5-2.5 minutes on a 2-core machine, once per machine: skipped when an
   image of that tag exists (``make test`` builds it before pytest starts).
2. **runner** ``reward-sandbox-runner:<hash of base tag + sandbox/runtime/>`` --
   the base plus ``sandbox/runtime/`` copied to ``/opt/sandbox/runtime`` (a
   container created from the base, ``put_archive``, ``commit``: under a second,
   ~10 s the first time after a fresh base).

Why copy the runtime in rather than bind-mount it read-only at container start:
a bind mount names a path on the *daemon's* machine, which breaks as soon as the
executor itself runs in a container next to the daemon (docker-compose, a
remote ``DOCKER_HOST``). Baking it into a thin layer keyed by its content gives
the same "edit the runtime, no rebuild of the big part" property and works
wherever the daemon is. Old runner tags stay (thin layers; another process may still
use its own): ``cleanup --images`` removes the unused ones.

Launch lines::

    python -m sandbox.docker_image build        # both layers, each skipped when cached
    python -m sandbox.docker_image build --if-possible   # the same, but a missing engine is not an error
    python -m sandbox.docker_image build --force-base   # rebuild the rootfs too
    python -m sandbox.docker_image tag          # the runner tag this checkout needs
    python -m sandbox.docker_image cleanup      # remove sandbox containers left by dead processes
    python -m sandbox.docker_image cleanup --images   # ... and runner images other than this checkout's

Needs root (debootstrap), ``debootstrap`` and a running Docker engine:
``scripts/system_setup.sh`` installs and starts them.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

BASE_REPOSITORY = "reward-sandbox-base"
RUNNER_REPOSITORY = "reward-sandbox-runner"
#: Every image and container this project creates carries this label (value: the role).
LABEL = "org.reward-suite.sandbox"
RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
RUNTIME_PATH_IN_IMAGE = "/opt/sandbox/runtime"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
LOCK_PATH = Path(tempfile.gettempdir()) / "reward-sandbox-image.lock"


class ImageBuildError(RuntimeError):
    """The runner image could not be built; the message says what to install or run."""


@dataclass(frozen=True)
class BaseRecipe:
    """Everything that decides the base root filesystem's content (hashed into its tag).

    The mirror is not part of it: any mirror of the suite yields the same packages.
    """

    suite: str = "bookworm"
    variant: str = "minbase"
    #: python3 (not python3-minimal: that lacks json, ast, most of the stdlib user code imports), g++ for C++.
    packages: tuple[str, ...] = ("python3", "g++")
    #: Removed after debootstrap: nothing in the sandbox reads them.
    prune: tuple[str, ...] = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
                              "var/cache/apt/archives", "var/lib/apt/lists", "var/log", "debootstrap")
    #: Bump when the build steps change in a way the fields above do not capture.
    revision: int = 1

    @property
    def tag(self) -> str:
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]
        return f"{BASE_REPOSITORY}:{digest}"


def runtime_digest(runtime_dir: Path = RUNTIME_DIR) -> str:
    """Hash of the in-sandbox runtime's files (names and contents; caches excluded)."""
    h = hashlib.sha256()
    for path in sorted(_runtime_files(runtime_dir)):
        h.update(str(path.relative_to(runtime_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def runner_tag(recipe: BaseRecipe = BaseRecipe(), runtime_dir: Path = RUNTIME_DIR) -> str:
    digest = hashlib.sha256(f"{recipe.tag}\0{runtime_digest(runtime_dir)}".encode()).hexdigest()[:12]
    return f"{RUNNER_REPOSITORY}:{digest}"


def debian_mirror(sources_dir: Path = Path("/etc/apt")) -> str:
    """The host's Debian mirror (deb822 ``URIs:`` or one-line ``deb URL``), else deb.debian.org.

    ``SANDBOX_DEBIAN_MIRROR`` overrides it. Security and other archives are skipped.
    """
    override = os.environ.get("SANDBOX_DEBIAN_MIRROR")
    if override:
        return override
    candidates = sorted(sources_dir.glob("sources.list.d/*.sources")) + [sources_dir / "sources.list"]
    candidates += sorted(sources_dir.glob("sources.list.d/*.list"))
    for path in candidates:
        try:
            text = path.read_text()
        except OSError:
            continue
        for uri in re.findall(r"^URIs:\s*(\S+)", text, re.M) + re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M):
            if "debian" in uri and "security" not in uri and "debian-ports" not in uri:
                return uri.rstrip("/")
    return DEFAULT_MIRROR


def docker_client():
    """A client for the local engine (``DOCKER_HOST`` honoured); API version negotiated."""
    import docker  # the SDK is an optional dependency: `pip install reward-suite[docker]`

    return docker.from_env(timeout=120)


def ensure_image(client=None, *, recipe: BaseRecipe = BaseRecipe(), force_base: bool = False) -> str:
    """Build what is missing of base + runner and return the runner tag. Serialised across processes."""
    client = client or docker_client()
    tag = runner_tag(recipe)
    if not force_base and _image_exists(client, tag):
        return tag
    with _build_lock():
        if force_base or not _image_exists(client, recipe.tag):
            build_base(client, recipe)
        if not _image_exists(client, tag):
            build_runner(client, recipe.tag, tag)
    return tag


def build_base(client, recipe: BaseRecipe) -> None:
    """debootstrap + prune + docker import, in a temporary directory that is always removed."""
    if os.geteuid() != 0:
        raise ImageBuildError("building the sandbox base image needs root (debootstrap); "
                              "run `sudo .venv/bin/python -m sandbox.docker_image build` once")
    debootstrap = shutil.which("debootstrap") or next(
        (p for p in ("/usr/sbin/debootstrap", "/sbin/debootstrap") if Path(p).exists()), None)
    if debootstrap is None:
        raise ImageBuildError("debootstrap is not installed; run scripts/system_setup.sh (apt-get install debootstrap)")
    mirror = debian_mirror()
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="reward-sandbox-rootfs-", dir=os.environ.get("SANDBOX_BUILD_DIR")))
    rootfs = work / "rootfs"
    try:
        cmd = [debootstrap, f"--variant={recipe.variant}", f"--include={','.join(recipe.packages)}",
               recipe.suite, str(rootfs), mirror]
        logger.info("building %s: %s", recipe.tag, " ".join(cmd))
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        if proc.returncode != 0:
            raise ImageBuildError(f"debootstrap failed (exit {proc.returncode}, mirror {mirror}):\n"
                                  + "\n".join(proc.stdout.splitlines()[-25:]))
        _unmount_below(rootfs)
        for rel in recipe.prune:
            shutil.rmtree(rootfs / rel, ignore_errors=True)
        for rel in ("var/log", "var/cache/apt/archives/partial", "var/lib/apt/lists/partial"):
            (rootfs / rel).mkdir(parents=True, exist_ok=True)
        tarball = work / "rootfs.tar"
        subprocess.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        repository, tag = recipe.tag.split(":")
        client.api.import_image_from_file(
            str(tarball), repository=repository, tag=tag,
            changes=["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                     "ENV LANG=C.UTF-8", f"LABEL {LABEL}=base"])
        if not _image_exists(client, recipe.tag):
            raise ImageBuildError(f"docker import did not produce {recipe.tag}")
        logger.info("built %s in %.0f s", recipe.tag, time.monotonic() - started)
    finally:
        _unmount_below(rootfs)
        shutil.rmtree(work, ignore_errors=True)


def build_runner(client, base_tag: str, tag: str, runtime_dir: Path = RUNTIME_DIR) -> None:
    """The base plus the runtime at /opt/sandbox/runtime, as one thin committed layer."""
    if not runtime_dir.is_dir():
        raise ImageBuildError(f"{runtime_dir} is missing: the in-sandbox runtime ships with this package")
    container = client.containers.create(base_tag, command=["true"], network_mode="none",
                                         labels={LABEL: "image-build"})
    try:
        container.put_archive("/", _runtime_tar(runtime_dir))
        repository, version = tag.split(":")
        container.commit(repository=repository, tag=version,
                         changes=[f"LABEL {LABEL}=runner", "WORKDIR /tmp"])
    finally:
        container.remove(force=True)
    logger.info("built %s from %s", tag, base_tag)


def cleanup_containers(client=None, *, only_dead_owners: bool = True) -> int:
    """Remove sandbox containers; with ``only_dead_owners`` only those whose creating process is gone.

    Each container records its creator's hostname and pid in labels, so leftovers
    of a crashed test run are found without touching a live executor's containers.
    """
    import docker.errors

    client = client or docker_client()
    removed = 0
    host = os.uname().nodename
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        labels = container.labels
        if only_dead_owners and labels.get(f"{LABEL}.host") == host and _pid_alive(labels.get(f"{LABEL}.pid")):
            continue
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            container.remove(force=True)
            removed += 1
    return removed


# -- helpers -------------------------------------------------------------------------------------


def _runtime_files(runtime_dir: Path) -> Iterator[Path]:
    for path in runtime_dir.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            yield path


def _runtime_tar(runtime_dir: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for parent in ("opt", "opt/sandbox", RUNTIME_PATH_IN_IMAGE.lstrip("/")):
            info = tarfile.TarInfo(parent)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path in sorted(_runtime_files(runtime_dir)):
            rel = path.relative_to(runtime_dir)
            for i in range(1, len(rel.parts)):
                info = tarfile.TarInfo(f"{RUNTIME_PATH_IN_IMAGE.lstrip('/')}/{'/'.join(rel.parts[:i])}")
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{RUNTIME_PATH_IN_IMAGE.lstrip('/')}/{rel.as_posix()}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _image_exists(client, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def remove_old_runner_images(client=None, keep: str | None = None) -> int:
    """Untag every runner image but ``keep`` (default: this checkout's) that no container uses.

    Not done automatically: another process may be about to start containers from
    its own (older or newer) runtime. Each runner is a thin layer over the shared base.
    """
    import docker.errors

    client = client or docker_client()
    keep = keep or runner_tag()
    removed = 0
    for image in client.images.list(name=RUNNER_REPOSITORY):
        for tag in image.tags:
            if tag != keep:
                with contextlib.suppress(docker.errors.APIError):  # still used by a container: keep it
                    client.images.remove(tag)
                    removed += 1
    return removed


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    """One build at a time on this machine (parallel test sessions share the image)."""
    with open(LOCK_PATH, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _unmount_below(root: Path) -> None:
    """debootstrap mounts proc/sys inside the target; a failed run can leave them mounted."""
    prefix = str(root.resolve()) + "/"
    try:
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return
    for mountpoint in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", mountpoint], check=False)


def _pid_alive(pid: str | None) -> bool:
    try:
        os.kill(int(pid or ""), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.docker_image", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the base and runner images (each skipped when cached)")
    build.add_argument("--force-base", action="store_true", help="rebuild the debootstrap base even if cached")
    build.add_argument("--if-possible", action="store_true",
                       help="exit 0 with a note when there is no Docker engine or SDK (used by `make test`)")
    sub.add_parser("tag", help="print the runner tag this checkout needs")
    cleanup = sub.add_parser("cleanup", help="remove sandbox containers left behind by dead processes")
    cleanup.add_argument("--all", action="store_true", help="also remove those of live processes")
    cleanup.add_argument("--images", action="store_true", help="also untag unused runner images but this one")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(processName)s %(name)s: %(message)s")
    if args.command == "tag":
        print(runner_tag())
    elif args.command == "build":
        started = time.monotonic()
        why = ""
        try:
            import docker.errors
        except ImportError:
            why = "the Docker SDK is not installed (pip install -e '.[docker]')"
        else:
            try:
                client = docker_client()
                client.ping()
            except docker.errors.DockerException as exc:
                why = f"no Docker engine answers ({exc}); scripts/system_setup.sh starts one"
        if why:
            print(f"{'note' if args.if_possible else 'error'}: {why}; the sandbox runner image is not built",
                  file=sys.stderr)
            return 0 if args.if_possible else 1
        try:
            tag = ensure_image(client, force_base=args.force_base)
        except ImageBuildError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"{tag} ready ({time.monotonic() - started:.1f} s)")
    elif args.command == "cleanup":
        print(f"removed {cleanup_containers(only_dead_owners=not args.all)} container(s)")
        if args.images:
            print(f"removed {remove_old_runner_images()} runner image tag(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
