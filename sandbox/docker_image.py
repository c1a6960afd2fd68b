"""Build the Docker backend's runner image on this machine: no registry needed.

No image registry is reachable from where this runs (CI, air-gapped reward
nodes), so the image is made here from Debian's package mirror, the one
network source every machine in the project already uses for apt:

1. **base** ``reward-sandbox-base:<hash of the recipe>`` -- ``debootstrap
   --variant=minbase --include=<packages>`` a Debian root filesystem (the mirror
   is read from the host's apt sources), prune docs and caches, ``docker import``
   it, then run every language's ``version`` command inside it and record what
   the image can run (:func:`probe_image`: ``/opt/sandbox/languages.json`` and the
   label ``org.reward-suite.sandbox.languages``). The packages are those of a
   *language set* (``SANDBOX_LANGUAGES=core|all|python,go,...``, the toolchains'
   Debian ``packages`` in sandbox/languages.toml): each set is its own tag.
   ``core`` (python, C, C++, bash) takes 1.5-2.5 minutes on a 2-core machine,
   ``all`` (~1 GB from the mirror) longer (docs/sandbox.md has the sizes and
   times); once per machine: skipped when an image of that tag exists
   (``make test`` builds the set named by ``SANDBOX_LANGUAGES`` before pytest starts).
2. **runner** ``reward-sandbox-runner:<hash of base tag + sandbox/runtime/>`` --
   the base plus ``sandbox/runtime/`` copied to ``/opt/sandbox/runtime`` and its C
   helpers (``runtime/*.c``: the system calls of fork servers like R's) compiled
   there by the image's gcc, against the image's libc (a container created from the
   base, ``put_archive``, gcc, ``commit``: a few seconds, ~10 s the first time after
   a fresh base).

Why copy the runtime in rather than bind-mount it read-only at container start:
a bind mount names a path on the *daemon's* machine, which breaks as soon as the
executor itself runs in a container next to the daemon (docker-compose, a
remote ``DOCKER_HOST``). Baking it into a thin layer keyed by its content gives
the same "edit the runtime, no rebuild of the big part" property and works
wherever the daemon is. Old runner tags stay (thin layers; another process may still
use its own): ``cleanup --images`` removes the unused ones.

Launch lines::

    python -m sandbox.docker_image build        # both layers, each cached (set: $SANDBOX_LANGUAGES or core)
    python -m sandbox.docker_image build --languages all     # every language with Debian packages
    python -m sandbox.docker_image build --languages python,go,java   # core plus these
    python -m sandbox.docker_image languages    # what the runner image of the set can run, with versions
    python -m sandbox.docker_image build --if-possible   # the same, but a missing engine is not an error
    python -m sandbox.docker_image build --force-base   # rebuild the rootfs too
    python -m sandbox.docker_image tag          # the runner tag this checkout needs (for --languages too)
    python -m sandbox.docker_image cleanup      # remove sandbox containers left by dead processes
    python -m sandbox.docker_image cleanup --images   # ... and runner images other than this checkout's

Needs root (debootstrap), ``debootstrap`` and a running Docker engine:
``scripts/system_setup.sh`` installs and starts them. ``SANDBOX_DEBOOTSTRAP_CACHE=<dir>``
keeps the downloaded packages there (debootstrap ``--cache-dir``) for the next build.
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

from sandbox.languages import BUILTIN_LANGUAGES, SANDBOX_PATH, languages_in_set, version_line
from sandbox.runtime_build import CFLAGS as HELPER_CFLAGS

logger = logging.getLogger(__name__)

BASE_REPOSITORY = "reward-sandbox-base"
RUNNER_REPOSITORY = "reward-sandbox-runner"
#: Every image and container this project creates carries this label (value: the role).
LABEL = "org.reward-suite.sandbox"
RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
RUNTIME_PATH_IN_IMAGE = "/opt/sandbox/runtime"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
LANGUAGES_ENV = "SANDBOX_LANGUAGES"
#: BaseRecipe.revision of the language-set recipes (their build steps: apt-get, the probe).
LANGUAGE_RECIPE_REVISION = 2
#: What the image can run (written by probe_image): a file in the image and the same JSON as a label.
LANGUAGES_PATH_IN_IMAGE = "/opt/sandbox/languages.json"
LANGUAGES_LABEL = f"{LABEL}.languages"
LOCK_PATH = Path(tempfile.gettempdir()) / "reward-sandbox-image.lock"
#: Bump when build_runner's steps change (2: the runtime's C helpers are compiled in the image).
RUNNER_REVISION = 2


class ImageBuildError(RuntimeError):
    """The runner image could not be built; the message says what to install or run."""


@dataclass(frozen=True)
class BaseRecipe:
    """Everything that decides the base root filesystem's content (hashed into its tag).

    The mirror is not part of it: any mirror of the suite yields the same packages. Build the
    recipe of a language set with :meth:`for_languages`; a plain ``BaseRecipe(packages=...)``
    (deploy/docker/build_images.py) records no languages.
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
    #: The SANDBOX_LANGUAGES set the packages come from ("": none; then no language probe is recorded).
    languages: str = ""

    @classmethod
    def for_languages(cls, selection: str | None = None) -> BaseRecipe:
        """The recipe of a language set (default: ``$SANDBOX_LANGUAGES``, else ``core``)."""
        name = language_selection(selection)
        chosen = languages_in_set(name)
        packages = tuple(sorted({"python3", *(p for lang in chosen for p in lang.packages)}))
        return cls(packages=packages, languages=name, revision=LANGUAGE_RECIPE_REVISION)

    @property
    def tag(self) -> str:
        fields = asdict(self)
        if not fields["languages"]:
            del fields["languages"]         # a recipe without languages keeps the tag it always had
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]
        return f"{BASE_REPOSITORY}:{digest}"


def language_selection(selection: str | None = None) -> str:
    """``selection`` (else ``$SANDBOX_LANGUAGES``, else ``core``) in one spelling: ``core``, ``all``, or
    the sorted names beyond core (``go,java``). Raises InvalidExecutionRequest for an unknown name."""
    raw = (selection or os.environ.get(LANGUAGES_ENV) or "core").strip()
    if raw in ("core", "all"):
        return raw
    chosen = {lang.name for lang in languages_in_set(raw)}
    for name in ("core", "all"):
        if chosen == {lang.name for lang in languages_in_set(name)}:
            return name
    core = {lang.name for lang in languages_in_set("core")}
    return ",".join(sorted(chosen - core)) or "core"


def runtime_digest(runtime_dir: Path = RUNTIME_DIR) -> str:
    """Hash of the in-sandbox runtime's files (names and contents; caches excluded)."""
    h = hashlib.sha256()
    for path in sorted(_runtime_files(runtime_dir)):
        h.update(str(path.relative_to(runtime_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def runner_tag(recipe: BaseRecipe | None = None, runtime_dir: Path = RUNTIME_DIR) -> str:
    """The runner tag of ``recipe`` (default: that of ``$SANDBOX_LANGUAGES``) and this runtime."""
    recipe = recipe or BaseRecipe.for_languages()
    key = f"{recipe.tag}\0{runtime_digest(runtime_dir)}\0{RUNNER_REVISION}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
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


def ensure_image(client=None, *, recipe: BaseRecipe | None = None, force_base: bool = False) -> str:
    """Build what is missing of base + runner and return the runner tag. Serialised across processes.

    ``recipe`` None: the language set of ``$SANDBOX_LANGUAGES`` (else ``core``).
    """
    client = client or docker_client()
    recipe = recipe or BaseRecipe.for_languages()
    tag = runner_tag(recipe)
    if not force_base and _image_exists(client, tag):
        return tag
    with _build_lock(recipe.tag):          # per base: building `all` does not hold up a `core` test run
        if force_base or not _image_exists(client, recipe.tag):
            build_base(client, recipe)
        if not _image_exists(client, tag):
            build_runner(client, recipe.tag, tag)
    return tag


def build_base(client, recipe: BaseRecipe) -> None:
    """debootstrap (+ apt-get of the language set's other packages) + prune + docker import (+ the
    language probe), in a temporary directory that is always removed."""
    import docker.errors

    if os.geteuid() != 0:
        raise ImageBuildError("building the sandbox base image needs root (debootstrap); "
                              "run `sudo .venv/bin/python -m sandbox.docker_image build` once")
    debootstrap = shutil.which("debootstrap") or next(
        (p for p in ("/usr/sbin/debootstrap", "/sbin/debootstrap") if Path(p).exists()), None)
    if debootstrap is None:
        raise ImageBuildError("debootstrap is not installed; run scripts/system_setup.sh (apt-get install debootstrap)")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="reward-sandbox-rootfs-", dir=os.environ.get("SANDBOX_BUILD_DIR")))
    rootfs = work / "rootfs"
    try:
        _bootstrap(debootstrap, rootfs, recipe)
        for rel in recipe.prune:
            shutil.rmtree(rootfs / rel, ignore_errors=True)
        for rel in ("var/log", "var/cache/apt/archives/partial", "var/lib/apt/lists/partial"):
            (rootfs / rel).mkdir(parents=True, exist_ok=True)
        tarball = work / "rootfs.tar"
        subprocess.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        shutil.rmtree(rootfs, ignore_errors=True)
        # With languages, the imported root filesystem is probed and committed as the final tag.
        imported = f"{recipe.tag}-rootfs" if recipe.languages else recipe.tag
        client.api.import_image_from_file(
            str(tarball), repository=imported.split(":")[0], tag=imported.split(":")[1],
            changes=["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                     "ENV LANG=C.UTF-8", f"LABEL {LABEL}=base"])
        if not _image_exists(client, imported):
            raise ImageBuildError(f"docker import did not produce {imported}")
        tarball.unlink()
        if recipe.languages:
            try:
                record_languages(client, imported, recipe)
            finally:
                with contextlib.suppress(docker.errors.APIError):
                    client.images.remove(imported)
        logger.info("built %s (languages: %s) in %.0f s", recipe.tag, recipe.languages or "none",
                    time.monotonic() - started)
    finally:
        _unmount_below(rootfs)
        shutil.rmtree(work, ignore_errors=True)


def _bootstrap(debootstrap: str, rootfs: Path, recipe: BaseRecipe) -> None:
    """The root filesystem with ``recipe.packages`` installed.

    debootstrap installs the core toolchains itself; the rest of a language set goes through apt-get
    in a chroot: debootstrap's resolver knows no virtual packages (Debian's jest depends on
    node-type-fest, which only node-read-pkg provides) and gives up on them.
    """
    mirror = debian_mirror()
    cache = os.environ.get("SANDBOX_DEBOOTSTRAP_CACHE")
    if cache:
        Path(cache).mkdir(parents=True, exist_ok=True)
    first = recipe.packages
    if recipe.languages:
        core = {p for lang in languages_in_set("core") for p in lang.packages} | {"python3"}
        first = tuple(p for p in recipe.packages if p in core)
    cmd = [debootstrap, f"--variant={recipe.variant}", f"--include={','.join(first)}",
           *([f"--cache-dir={Path(cache).resolve()}"] if cache else []), recipe.suite, str(rootfs), mirror]
    logger.info("building %s: %s", recipe.tag, " ".join(cmd))
    _run_step(cmd, f"debootstrap (mirror {mirror})")
    _unmount_below(rootfs)
    rest = [p for p in recipe.packages if p not in first]
    if rest:
        _apt_install(rootfs, rest, cache)


def _apt_install(rootfs: Path, packages: list[str], cache: str | None) -> None:
    """``apt-get install --no-install-recommends`` in a chroot of ``rootfs`` (its sources.list names
    the mirror debootstrap used), with /proc mounted (a JDK's post-install runs java) and no service
    started (policy-rc.d)."""
    logger.info("installing %d more packages with apt-get: %s", len(packages), " ".join(packages))
    started = time.monotonic()
    shutil.copyfile("/etc/resolv.conf", rootfs / "etc" / "resolv.conf")
    policy = rootfs / "usr" / "sbin" / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    mounts = [("proc", rootfs / "proc", ["-t", "proc", "proc"])]
    if cache:
        (Path(cache) / "partial").mkdir(parents=True, exist_ok=True)
        mounts.append(("cache", rootfs / "var/cache/apt/archives", ["--bind", str(Path(cache).resolve())]))
    try:
        for _, target, how in mounts:
            target.mkdir(parents=True, exist_ok=True)
            _run_step(["mount", *how, str(target)], "mount")
        env = ["env", "DEBIAN_FRONTEND=noninteractive", "LANG=C.UTF-8", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"]
        _run_step(["chroot", str(rootfs), *env, "apt-get", "-q", "update"], "apt-get update")
        _run_step(["chroot", str(rootfs), *env, "apt-get", "-q", "-y", "--no-install-recommends", "install",
                   *packages], "apt-get install")
        for name in ("pkgcache.bin", "srcpkgcache.bin"):       # apt's package index caches: ~75 MB
            (rootfs / "var/cache/apt" / name).unlink(missing_ok=True)
        logger.info("apt-get installed them in %.0f s", time.monotonic() - started)
    finally:
        _unmount_below(rootfs)
        policy.unlink(missing_ok=True)
        (rootfs / "etc" / "resolv.conf").unlink(missing_ok=True)


def _run_step(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if proc.returncode != 0:
        raise ImageBuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)[:300]}\n"
                              + "\n".join(proc.stdout.splitlines()[-25:]))


def build_runner(client, base_tag: str, tag: str, runtime_dir: Path = RUNTIME_DIR) -> None:
    """The base plus the runtime at /opt/sandbox/runtime, as one thin committed layer, with the runtime's
    C helpers compiled there by the image's own compiler (:data:`_BUILD_HELPERS`)."""
    import docker.errors

    if not runtime_dir.is_dir():
        raise ImageBuildError(f"{runtime_dir} is missing: the in-sandbox runtime ships with this package")
    container = client.containers.create(base_tag, command=["/bin/sh", "-c", _BUILD_HELPERS, "build-helpers",
                                                            *HELPER_CFLAGS],
                                         network_mode="none", labels=owner_labels("image-build"),
                                         environment={"PATH": SANDBOX_PATH}, user="0:0")
    try:
        container.put_archive("/", _runtime_tar(runtime_dir))
        try:
            container.start()
            status = container.wait(timeout=300)
            said = container.logs(stdout=True, stderr=True).decode("utf-8", "replace").strip()
        except (docker.errors.APIError, OSError) as exc:      # OSError: the wait timed out
            raise ImageBuildError(f"building the runtime's C helpers in {base_tag} failed: {exc}") from None
        if status.get("StatusCode") != 0 or said:
            logger.warning("%s: the runtime's C helpers (the fork servers that load them cannot start without "
                           "them; their languages then run their run command): exit %s: %s", tag,
                           status.get("StatusCode"), said[-2000:])
        repository, version = tag.split(":")
        container.commit(repository=repository, tag=version,
                         changes=[f"LABEL {LABEL}=runner", "WORKDIR /tmp", 'CMD ["true"]'])
    finally:
        container.remove(force=True)
    logger.info("built %s from %s", tag, base_tag)


#: Runs in the runner's build container (argv: the compiler flags): each ``runtime/*.c`` -> ``<stem>.so``
#: beside it (sandbox/runtime_build.py does the same on the host for the process backend). Built by the
#: image's gcc against the image's libc, so the helper always loads where it runs; an image without a
#: compiler (a custom recipe) just lacks it.
_BUILD_HELPERS = f"""
cd {RUNTIME_PATH_IN_IMAGE} || exit 1
cc=$(command -v gcc || command -v cc) || {{ echo "no C compiler in the image"; exit 0; }}
for c in *.c; do
    [ -e "$c" ] || continue
    "$cc" "$@" -o "${{c%.c}}.so" "$c" || echo "cannot build $c"
done
"""


#: Runs inside the image (its python3; argv[1]: JSON {"path", "languages": {name: {"tools", "version"}}}):
#: which tools each language needs are on the sandbox's PATH and what its version command prints.
_PROBE_SCRIPT = r"""
import json, os, shutil, subprocess, sys
spec = json.loads(sys.argv[1])
path = spec["path"]
env = {"PATH": path, "LANG": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}
def present(tool):
    return os.path.exists(tool) if tool.startswith("/") else shutil.which(tool, path=path) is not None
tools, out, printed = {}, {}, {}
for name, lang in spec["languages"].items():
    missing = [t for t in lang["tools"] if not tools.setdefault(t, present(t))]
    text = ""
    if not missing and lang["version"]:
        key = json.dumps(lang["version"])
        if key not in printed:
            try:
                proc = subprocess.run(lang["version"], capture_output=True, timeout=120, env=env, cwd="/tmp",
                                      stdin=subprocess.DEVNULL)
                printed[key] = (proc.stdout + b"\n" + proc.stderr).decode("utf-8", "replace")[:4000]
            except (OSError, subprocess.TimeoutExpired) as exc:
                printed[key] = ""
        text = printed[key]
    out[name] = {"missing": missing, "version_output": text}
print(json.dumps({"tools": tools, "languages": out}))
"""


def probe_image(client, image: str, languages=None) -> dict:
    """Run the probe script in a container of ``image`` (no network, read-only root, tmpfs /tmp, as in
    use): ``{"tools": {tool: present}, "languages": {name: {"version", "missing"}}}`` for every language
    of ``languages`` (default: the built-in table)."""
    import docker.errors

    table = BUILTIN_LANGUAGES if languages is None else languages
    spec = {"path": SANDBOX_PATH, "languages": {lang.name: {"tools": list(lang.required_tools()),
                                                            "version": list(lang.version)}
                                                for lang in table.values()}}
    container = client.containers.create(image, command=["python3", "-I", "-c", _PROBE_SCRIPT, json.dumps(spec)],
                                         network_mode="none", read_only=True, labels=owner_labels("image-build"),
                                         tmpfs={"/tmp": "rw,exec,size=1024m,mode=1777"}, user="0:0")
    try:
        container.start()
        status = container.wait(timeout=900)
        stdout = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
        if status.get("StatusCode") != 0:
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            raise ImageBuildError(f"the language probe failed in {image} (exit {status.get('StatusCode')}): "
                                  f"{stderr[-2000:]}")
    except (docker.errors.APIError, OSError) as exc:    # OSError: the wait timed out
        raise ImageBuildError(f"the language probe could not run in {image}: {exc}") from None
    finally:
        with contextlib.suppress(docker.errors.APIError):
            container.remove(force=True)
    raw = json.loads(stdout)
    return {"tools": raw["tools"],
            "languages": {name: {"version": version_line(item["version_output"]) if not item["missing"] else "",
                                 "missing": item["missing"]} for name, item in raw["languages"].items()}}


def record_languages(client, imported: str, recipe: BaseRecipe) -> dict:
    """Probe ``imported`` and commit it as ``recipe.tag`` with the record as a file and a label."""
    started = time.monotonic()
    probed = probe_image(client, imported)
    record = {"set": recipe.languages, "packages": list(recipe.packages), "tools": probed["tools"],
              "languages": {n: v["version"] for n, v in probed["languages"].items() if not v["missing"]},
              "missing": {n: v["missing"] for n, v in probed["languages"].items() if v["missing"]}}
    data = json.dumps(record, indent=1, sort_keys=True).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for parent in ("opt", "opt/sandbox"):
            info = tarfile.TarInfo(parent)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        info = tarfile.TarInfo(LANGUAGES_PATH_IN_IMAGE.lstrip("/"))
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    container = client.containers.create(imported, command=["true"], network_mode="none",
                                         labels=owner_labels("image-build"))
    try:
        container.put_archive("/", buf.getvalue())
        repository, tag = recipe.tag.split(":")
        label = json.dumps(record, sort_keys=True, separators=(",", ":"))
        container.commit(repository=repository, tag=tag,
                         changes=[f"LABEL {LABEL}=base", f"LABEL {LANGUAGES_LABEL}={json.dumps(label)}"])
    finally:
        container.remove(force=True)
    logger.info("%s runs %d languages (probed in %.0f s): %s", recipe.tag, len(record["languages"]),
                time.monotonic() - started,
                ", ".join(f"{n} ({v})" for n, v in sorted(record["languages"].items())))
    return record


def image_languages(client, image: str) -> dict | None:
    """The language record of ``image`` (see :func:`record_languages`), or None when it has none
    (an image built without a language set, or before sets existed)."""
    import docker.errors

    try:
        raw = client.images.get(image).labels.get(LANGUAGES_LABEL)
    except docker.errors.ImageNotFound:
        return None
    try:
        record = json.loads(raw) if raw else None
    except ValueError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("languages"), dict) else None


def owner_labels(role: str) -> dict[str, str]:
    """Labels of a container this process creates: its role, and this host and pid, so that
    :func:`cleanup_containers` in another process leaves it alone while this one lives."""
    return {LABEL: role, f"{LABEL}.host": os.uname().nodename, f"{LABEL}.pid": str(os.getpid())}


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
    """The runtime as a tar of ``/opt/sandbox/runtime``: root's alone (0700), as in the process backend's
    slots -- the zygote and A import it as root; a program (the slot uid) can neither read nor load it."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for parent, mode in (("opt", 0o755), ("opt/sandbox", 0o755), (RUNTIME_PATH_IN_IMAGE.lstrip("/"), 0o700)):
            info = tarfile.TarInfo(parent)
            info.type, info.mode = tarfile.DIRTYPE, mode
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
    """Untag every runner image but ``keep`` (default: this checkout's, for the core and all sets and
    ``$SANDBOX_LANGUAGES``'s) that no container uses.

    Not done automatically: another process may be about to start containers from
    its own (older or newer) runtime. Each runner is a thin layer over the shared base.
    """
    import docker.errors

    client = client or docker_client()
    kept = {keep} if keep else {runner_tag(BaseRecipe.for_languages(s)) for s in ("core", "all", None)}
    removed = 0
    for image in client.images.list(name=RUNNER_REPOSITORY):
        for tag in image.tags:
            if tag not in kept:
                with contextlib.suppress(docker.errors.APIError):  # still used by a container: keep it
                    client.images.remove(tag)
                    removed += 1
    return removed


@contextlib.contextmanager
def _build_lock(tag: str = "") -> Iterator[None]:
    """One build of an image at a time on this machine (parallel test sessions share the image);
    ``tag`` "": one lock for every build (deploy/docker/build_images.py)."""
    path = LOCK_PATH.with_name(f"{LOCK_PATH.stem}-{tag.rsplit(':', 1)[-1]}.lock") if tag else LOCK_PATH
    with open(path, "a") as fh:
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
    tag = sub.add_parser("tag", help="print the runner tag this checkout needs")
    show = sub.add_parser("languages", help="print what the runner image of the set can run (JSON; builds nothing)")
    for each in (build, tag, show):
        each.add_argument("--languages", default=os.environ.get(LANGUAGES_ENV) or "core",
                          help="language set: core, all, or a comma-separated list of languages (plus core); "
                               f"default ${LANGUAGES_ENV}, else core")
    cleanup = sub.add_parser("cleanup", help="remove sandbox containers left behind by dead processes")
    cleanup.add_argument("--all", action="store_true", help="also remove those of live processes")
    cleanup.add_argument("--images", action="store_true", help="also untag unused runner images but this one")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(processName)s %(name)s: %(message)s")
    try:
        recipe = BaseRecipe.for_languages(args.languages) if args.command in ("build", "tag", "languages") else None
    except ValueError as exc:                # InvalidExecutionRequest: an unknown language name
        print(f"error: --languages/{LANGUAGES_ENV}: {exc}", file=sys.stderr)
        return 2
    if args.command == "tag":
        print(runner_tag(recipe))
    elif args.command == "languages":
        record = image_languages(docker_client(), recipe.tag)
        if record is None:
            print(f"error: no image {recipe.tag} with a language record; run: python -m sandbox.docker_image "
                  f"build --languages {recipe.languages}", file=sys.stderr)
            return 1
        print(json.dumps({"image": recipe.tag, **record}, indent=2, sort_keys=True))
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
            tag = ensure_image(client, recipe=recipe, force_base=args.force_base)
        except ImageBuildError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"{tag} ready: languages {recipe.languages} ({time.monotonic() - started:.1f} s)")
    elif args.command == "cleanup":
        print(f"removed {cleanup_containers(only_dead_owners=not args.all)} container(s)")
        if args.images:
            print(f"removed {remove_old_runner_images()} runner image tag(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
