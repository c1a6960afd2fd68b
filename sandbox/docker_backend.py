"""The Docker backend: the sandbox's slots are warm containers of the locally built runner image.

Same interface and protocol as the process backend (slot_pool.py dispatches,
zygote_client.py speaks the frames); only how a slot is started differs. Each
slot is one long-lived container whose command is the zygote
(``python3 -I -S /opt/sandbox/runtime/zygote.py --mode container``); it runs
every execution of that slot, so an execution costs a fork inside a warm
container, not a ``docker run`` (3-5 per second on 2 cores against 35-95 warm:
``make bench-sandbox-docker``).

Transport: we attach to the container's stdin/stdout *before* starting it (so
the zygote's hello frame cannot be missed) and keep that one socket for the
container's life. Request frames are written raw to stdin; stdout comes back in
Docker's multiplexed form (8-byte header: stream, 0, 0, 0, big-endian length)
because the container has no TTY (a TTY would mangle binary frames), and
:class:`AttachTransport` strips the headers. Why not ``docker exec`` of a
zygote in an idle container: then the zygote's death would not end the
container, and a crash of this process would leave containers running; with
the zygote as the container's command and ``stdin_once``, a crashed host's
containers exit by themselves (stdin EOF ends the zygote). Containers are not
``auto_remove``d, so an ended one still has its logs for the error message;
``close()`` removes them, and a new executor removes those whose creating
process is dead.

Languages: the runner image is built for a language set (``SANDBOX_LANGUAGES`` or
``DockerConfig.language_set``: core, all, or a list) and records the toolchains it has and their
versions (sandbox/docker_image.py). ``executor.languages`` is sandbox/languages.toml -- the same
specs as the process backend -- probed against that record (:func:`image_language_table`): a
language the image lacks is UNSUPPORTED_LANGUAGE naming the image and its set, whatever this host
has installed; ``language_versions()`` gives the image's versions to ListLanguages. The language's
floors reach the container too: its memory cgroup follows the raised memory_mb
(:meth:`DockerConfig.container_memory_mb`).

Fork servers (sandbox/runtime/fork_servers.py): as on the process backend, each container's zygote
starts the warm interpreters of ``DockerConfig.fork_servers`` (by default ruby, php and R, when the
image has them), named on its command line; each execution of those languages is forked from one.
Their children confine themselves as a container's B does (a scratch directory of their own, the
container's IPC namespace swept after every execution), with no capability beyond ZYGOTE_CAPS; the
container's memory limit counts ``fork_server_memory_mb`` per server (sandbox/ARCHITECTURE.md).

Container settings (each a line of :func:`container_settings`), and why:

* root *inside the container*, ``cap_drop=ALL`` + ``cap_add`` SETUID, SETGID,
  KILL, CHOWN, DAC_OVERRIDE, FOWNER, SETPCAP: only the trusted zygote holds
  them (to become the slot uid, hand B its scratch directory, delete what B
  left in /tmp, /dev/shm, /dev/mqueue, and empty B's capability bounding set
  before it runs anything). The untrusted process B runs under a per-container
  random unprivileged uid, losing every capability at setuid;
  ``no-new-privileges`` blocks regaining any through setuid binaries. The
  supervisor (which runs the reference's check code) drops to another random
  uid of its own with only CAP_KILL and cannot fork (sandbox/runtime/isolation.py);
  Docker's default seccomp profile, and the zygote's own filter, refuse user
  namespaces to everything in the container.
  The alternative, the whole container as one unprivileged user, would let B
  signal the zygote (turning its 0 into an unscored SANDBOX_ERROR) and leave
  nothing able to clean up after it;
* ``read_only`` root; size-capped tmpfs ``/scratch`` (B's per-execution
  directories, root-owned 0711) and ``/tmp`` (exec allowed: g++ output must run;
  nosuid, nodev) -- the only places B can write are its scratch directory, /tmp,
  /dev/shm and /dev/mqueue, all swept after each B (sandbox/runtime/container_sweep.py);
* ``network_mode=none`` (only loopback; hostname ``sandbox``, in the container's /etc/hosts with localhost:
  sandbox/loopback_names.py), ``pids_limit``, ``nano_cpus``;
  ``mem_limit`` = ``memswap_limit`` (no swap) = the execution's memory + scratch +
  a slack for the zygote and supervisor, updated per execution when the limits
  change (there is no cgroup the zygote could write inside the container). That
  cgroup is a ceiling; inside, the supervisor holds each process to memory_mb of
  peak RSS and the program's processes together to memory_mb + scratch_mb (what the
  container's memory.stat charges them: runtime/cgroups.ProgramMemory), and an OOM
  kill in the container's cgroup (read-only inside) is a memory verdict. RLIMIT_AS is only a loose backstop: it counts
  address space, which threads reserve by the hundred MB, not memory.
  docker-init reaps orphans.

A slot whose zygote dies, hangs past the host deadline or reports a harness
error is killed (``docker rm -f``) and replaced by the pool. Every container is
labelled ``org.reward-suite.sandbox`` with this process's host and pid, so
leftovers of a crashed run are found: ``python -m sandbox.docker_image cleanup``.

    executor = DockerExecutor(DockerConfig(concurrency=4))    # builds the image if missing
    results = executor.execute_batch(requests)
    executor.close()                                         # removes every container
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import secrets
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reward_core.sandbox_contract import Cancellation, ExecutionRequest, ExecutionResult, Limits, SandboxUnavailable
from sandbox import loopback_names
from sandbox.compile_artifacts import DEFAULT_ENTRIES as ARTIFACT_ENTRIES
from sandbox.compile_artifacts import DEFAULT_MAX_MB as ARTIFACT_MAX_MB
from sandbox.compile_artifacts import ArtifactCache
from sandbox.docker_image import (
    LABEL,
    LANGUAGES_ENV,
    RUNTIME_PATH_IN_IMAGE,
    BaseRecipe,
    ImageBuildError,
    cleanup_containers,
    docker_client,
    ensure_image,
    image_languages,
    probe_image,
)
from sandbox.languages import (
    Language,
    LanguageTable,
    host_probe,
    load_languages,
    resolve_language,
    started_fork_servers,
)
from sandbox.slot_pool import SlotPool
from sandbox.zygote_client import SlotHandle, ZygoteDied, ZygoteTimeout

log = logging.getLogger(__name__)

_MUX_HEADER = struct.Struct(">BxxxI")        # stream (0 stdin, 1 stdout, 2 stderr), length
_STDOUT = 1
#: Capabilities the trusted zygote/supervisor need inside the container (see the module docstring).
ZYGOTE_CAPS = ("SETUID", "SETGID", "KILL", "CHOWN", "DAC_OVERRIDE", "FOWNER", "SETPCAP")
#: B's uid is drawn per container from this range: far from real users, and distinct per container
#: because without a user namespace RLIMIT_NPROC counts one uid's processes across all containers.
UNTRUSTED_UID_RANGE = (1_000_000, 1_000_000_000)


@dataclass(frozen=True)
class DockerConfig:
    """Settings of the docker backend; per-execution limits come with each request (Limits)."""

    concurrency: int = 2                 # containers (slots) kept warm
    image: str | None = None             # runner image tag; None: build/reuse sandbox.docker_image's tag
    #: The container's memory cgroup is set per execution (when it changes) to the request's
    #: Limits.memory_mb + scratch_mb + this slack, which covers the zygote and the supervisor A
    #: themselves -- A decodes what B returns (up to a 16 MB frame: ~250 MB of Python objects).
    memory_slack_mb: int = 384
    #: Floor of that memory_mb for compiled languages: g++ itself needs a few hundred MB.
    compile_memory_mb: int = 512
    cpus: float = 1.0                    # CPU quota per container (nano_cpus)
    pids_limit: int = 256                # container-wide; B's own RLIMIT_NPROC (Limits.max_processes) is lower
    tmpfs_mb: int = 512                  # size of each of the container's tmpfs, /scratch and /tmp (memory-backed)
    start_timeout_s: float = 60.0        # container start + zygote hello (self-test included)
    #: The language table (None: sandbox/languages.toml); which of them run is probed from the image.
    languages: Mapping[str, Language] | None = None
    #: The image's language set when ``image`` is None (SANDBOX_LANGUAGES=core|all|python,go,...):
    #: None means $SANDBOX_LANGUAGES, else core. Each set is its own image (sandbox/docker_image.py).
    language_set: str | None = None
    #: Successful compiles kept on the host (sandbox/compile_artifacts.py), keyed with the image's toolchain
    #: versions: a directory ("": a private temporary one, removed on close), its bounds (0: no caching).
    compile_cache_dir: str = ""
    compile_cache_mb: int = ARTIFACT_MAX_MB
    compile_cache_entries: int = ARTIFACT_ENTRIES
    #: The languages whose fork servers each container starts (languages.toml ``fork_server``;
    #: sandbox/runtime/fork_servers.py), as ProcessSandboxConfig.fork_servers: None is every one not
    #: marked ``fork_server_opt_in`` (ruby, php, R, nodejs), "default" in the tuple stands for those, () none.
    fork_servers: tuple[str, ...] | None = None
    #: Added to the container's memory cgroup per fork server it runs, for the warm interpreters' resident
    #: memory, which lives in that cgroup (measured in the `all` image: ruby 15 MB, php 18 MB, R 51 MB,
    #: racket 128 MB; the sum is what counts: those four, 212 MB together, fit in 4 x 64 MB).
    fork_server_memory_mb: int = 64

    def __post_init__(self) -> None:
        for name in ("concurrency", "memory_slack_mb", "compile_memory_mb", "cpus", "pids_limit", "tmpfs_mb",
                     "start_timeout_s", "fork_server_memory_mb"):
            if not getattr(self, name) > 0:
                raise ValueError(f"DockerConfig.{name} must be > 0, got {getattr(self, name)!r}")

    def container_memory_mb(self, limits: Limits, language: Language | None = None, fork_servers: int = 0) -> int:
        """The container's memory cgroup while it runs an execution with these limits in ``language``:
        the program's memory_mb raised to the language's floor (a JVM's heap, as zygote_client.build_wire
        raises it on the wire) and, for a compiled language, to the compiler's, plus scratch and slack,
        plus ``fork_server_memory_mb`` for each of the container's ``fork_servers``."""
        memory = max(int(limits.memory_mb), language.min_memory_mb if language is not None else 0)
        if language is not None and language.compiled:
            memory = max(memory, self.compile_memory_mb)
        return memory + int(limits.scratch_mb) + self.memory_slack_mb + fork_servers * self.fork_server_memory_mb


def container_settings(config: DockerConfig, image: str, untrusted_uid: int, labels: dict[str, str],
                       supervisor_uid: int | None = None,
                       fork_servers: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """Keyword arguments of ``APIClient.create_container`` + ``create_host_config`` for one slot.

    ``fork_servers``: language name -> its fork server's argv (languages.toml, ``{runtime}`` the
    runtime's directory in the image): the zygote starts these, and only these (fork_servers.py)."""
    fork_servers = dict(fork_servers or {})
    memory_mb = config.container_memory_mb(Limits(), fork_servers=len(fork_servers))
    host_config = dict(
        network_mode="none",
        read_only=True,
        # /scratch: B's per-execution directories (root-owned 0711: B cannot create siblings of its own);
        # /tmp: for programs that expect one; both exec (g++ output must run), swept after every B.
        tmpfs={"/scratch": f"rw,exec,nosuid,nodev,size={config.tmpfs_mb}m,mode=0711",
               "/tmp": f"rw,exec,nosuid,nodev,size={config.tmpfs_mb}m,mode=1777"},
        cap_drop=["ALL"],
        cap_add=list(ZYGOTE_CAPS),
        security_opt=["no-new-privileges"],
        pids_limit=config.pids_limit,
        mem_limit=f"{memory_mb}m",       # then set per execution: prepare()
        memswap_limit=f"{memory_mb}m",
        nano_cpus=int(config.cpus * 1e9),
        init=True,
        ipc_mode="private",
        extra_hosts={loopback_names.HOSTNAME: loopback_names.HOSTNAME_ADDRESS},   # its hostname resolves
    )
    command = ["python3", "-I", "-S", f"{RUNTIME_PATH_IN_IMAGE}/zygote.py", "--mode", "container",
               "--slot-uid", str(untrusted_uid), "--scratch", "/scratch", "--max-processes", str(config.pids_limit),
               "--max-memory-mb", str(1 << 20)]      # the host sets the container's memory: no cap needed inside
    if supervisor_uid is not None:
        command += ["--supervisor-uid", str(supervisor_uid)]
    if fork_servers:
        command += ["--fork-servers", json.dumps({name: [a.replace("{runtime}", RUNTIME_PATH_IN_IMAGE) for a in argv]
                                                  for name, argv in fork_servers.items()})]
    return dict(image=image, command=command, user="0:0", working_dir="/tmp", labels=labels,
                hostname=loopback_names.HOSTNAME,
                stdin_open=True, tty=False, detach=False,   # detach=False + stdin_open: StdinOnce
                environment={"PYTHONDONTWRITEBYTECODE": "1"},
                host_config=host_config)


def image_language_table(client: Any, image: str, languages: Mapping[str, Language] | None = None,
                         ) -> tuple[LanguageTable, dict[str, str]]:
    """``languages`` (default: the built-in table) probed against the runner image, and their versions.

    A language runs when every tool it needs is in the image: the image's record of the tools and
    versions (sandbox/docker_image.py: probe_image, at build time) answers; a tool the record does not
    know (a language added with ``--languages``, an image built before records existed) is looked up
    by running the probe in a container of the image, once here. What this host has is irrelevant:
    an incoming table's reasons from the host probe are dropped, other reasons (a server's own
    restrictions) kept.
    """
    table = languages if languages is not None else load_languages(probe=None)
    record = image_languages(client, image) or {"set": "", "tools": {}, "languages": {}}
    tools: dict[str, bool] = dict(record.get("tools") or {})
    versions: dict[str, str] = dict(record.get("languages") or {})
    unknown = {lang.name: lang for lang in table.values() if any(t not in tools for t in lang.required_tools())}
    failed = ""
    if unknown:
        try:
            probed = probe_image(client, image, unknown)
        except ImageBuildError as exc:      # those languages are off (and say why); the others run
            failed = str(exc)[:300]
        else:
            tools.update(probed["tools"])
            versions.update({n: item["version"] for n, item in probed["languages"].items() if not item["missing"]})
    built_with = f" (built with {LANGUAGES_ENV}={record['set']})" if record.get("set") else ""
    reasons = {}
    for lang in table.values():
        missing = [t for t in lang.required_tools() if not tools.get(t)]
        if failed and lang.name in unknown:
            reasons[lang.name] = f"could not probe the runner image {image} for it: {failed}"
        elif missing:
            rebuild = (f"; an image with it: {LANGUAGES_ENV}={lang.name} (or all) python -m sandbox.docker_image "
                       "build" if lang.packages else "")
            reasons[lang.name] = f"not in the runner image {image}{built_with}: {', '.join(missing)} not found{rebuild}"
    for name, reason in getattr(table, "unavailable", {}).items():
        if name in table and name not in reasons and reason != host_probe(table[name]):
            reasons[name] = reason
    available = {lang.name for lang in table.values() if lang.name not in reasons}
    return LanguageTable(table.values(), reasons), {n: v for n, v in versions.items() if n in available}


class AttachTransport:
    """The zygote's fd 0/1 through one attach socket: raw writes, demultiplexed reads."""

    def __init__(self, sock: socket.socket, keep_alive: Any = None, explain_eof: Any = None) -> None:
        self.sock = sock
        self._keep_alive = keep_alive     # docker-py's SocketIO wrapper: closing it (on GC) would close sock
        self._explain_eof = explain_eof   # () -> str: why the container ended (exit code, OOM, last log lines)
        self.sock.setblocking(False)
        self._header = b""
        self._left = 0                    # payload bytes left in the current multiplexed frame
        self._stream = _STDOUT
        self._eof = False

    def _wait(self, event: int, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ZygoteTimeout("host deadline passed")
        poller = select.poll()
        poller.register(self.sock.fileno(), event | select.POLLHUP | select.POLLERR)
        if not poller.poll(math.ceil(remaining * 1000)):
            raise ZygoteTimeout("host deadline passed")

    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[self.sock.send(view):]
            except BlockingIOError:
                self._wait(select.POLLOUT, deadline)
            except OSError as exc:
                raise ZygoteDied(f"cannot write to the container: {exc}") from None

    def _read(self, n: int, deadline: float) -> bytes:
        while True:
            try:
                return self.sock.recv(n)
            except BlockingIOError:
                self._wait(select.POLLIN, deadline)
            except OSError as exc:
                raise ZygoteDied(f"cannot read from the container: {exc}") from None

    def recv(self, max_bytes: int, deadline: float) -> bytes:
        """Up to ``max_bytes`` of the zygote's stdout; b"" at EOF (the container ended)."""
        while not self._eof:
            if self._left == 0:
                chunk = self._read(_MUX_HEADER.size - len(self._header), deadline)
                if not chunk:
                    self._eof = True
                    break
                self._header += chunk
                if len(self._header) == _MUX_HEADER.size:
                    self._stream, self._left = _MUX_HEADER.unpack(self._header)
                    self._header = b""
                continue
            chunk = self._read(min(max_bytes, self._left) if self._stream == _STDOUT else self._left, deadline)
            if not chunk:
                self._eof = True
                break
            self._left -= len(chunk)
            if self._stream == _STDOUT:
                return chunk
            # stderr is not attached (it goes to `docker logs`); anything else is dropped
        if self._explain_eof is not None:
            raise ZygoteDied(f"the container ended: {self._explain_eof()}")
        return b""

    def closed_by_peer(self) -> bool:
        """True if the container's side is gone (EOF/error pending while no answer is expected)."""
        if self._eof:
            return True
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        return bool(poller.poll(0))        # idle zygote: any readability means EOF or unsolicited bytes

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class DockerExecutor:
    """The Executor protocol on warm containers (one per slot). Thread-safe; never raises on hostile code.

    Raises SandboxUnavailable at construction when no engine answers or the
    image cannot be built; afterwards a failing container is a SANDBOX_ERROR
    result and is replaced.
    """

    name = "docker"

    def __init__(self, config: DockerConfig | None = None, *, client: Any = None, **overrides: Any) -> None:
        """``DockerExecutor(DockerConfig(...))`` or ``DockerExecutor(concurrency=4, image=...)``."""
        self.config = replace(config or DockerConfig(), **overrides)
        self.executor_id = uuid.uuid4().hex[:12]
        self.containers_started = 0
        self._lock = threading.Lock()
        self._containers: dict[int, str] = {}       # slot index -> live container id
        try:
            import docker.errors
        except ImportError:
            raise SandboxUnavailable("the docker backend needs the Docker SDK: "
                                     "pip install 'reward-suite[docker]'") from None
        try:
            self._client = client or docker_client()
            self._client.ping()
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(f"no Docker engine answers ({exc}); start one: scripts/system_setup.sh") from None
        try:
            self.image = self.config.image or ensure_image(
                self._client, recipe=BaseRecipe.for_languages(self.config.language_set))
            #: Every known language; those the image lacks are ``unavailable`` (UNSUPPORTED_LANGUAGE).
            self.languages, self._versions = image_language_table(self._client, self.image, self.config.languages)
        except (ImageBuildError, docker.errors.DockerException) as exc:
            raise SandboxUnavailable(f"the sandbox runner image is unavailable: {exc}") from None
        #: Language name -> its fork server's argv, for the servers each container starts (those of the image).
        self.fork_servers = started_fork_servers(self.languages, self.config.fork_servers)
        removed = cleanup_containers(self._client)       # leftovers of crashed processes on this machine
        log.info("docker sandbox: %s, image %s, %d containers (removed %d left by dead processes), languages: %s; "
                 "fork servers: %s", self.executor_id, self.image, self.config.concurrency, removed,
                 ", ".join(lang.name for lang in self.languages.available()), ", ".join(self.fork_servers) or "none")
        artifacts = ArtifactCache(self.config.compile_cache_dir or None, self.config.compile_cache_mb << 20,
                                  self.config.compile_cache_entries)
        self._pool = SlotPool(self.config.concurrency, self._start_slot, backend=self.name,
                              languages=self.languages, start_timeout_s=self.config.start_timeout_s,
                              artifact_cache=artifacts,
                              toolchain_version=lambda lang: self._versions.get(lang.name, ""))

    # -- slots -----------------------------------------------------------------------------------
    def _start_slot(self, index: int) -> SlotHandle:
        import docker.errors

        api = self._client.api
        labels = {LABEL: "runner", f"{LABEL}.host": os.uname().nodename, f"{LABEL}.pid": str(os.getpid()),
                  f"{LABEL}.executor": self.executor_id, f"{LABEL}.slot": str(index)}
        uid, supervisor_uid = (secrets.randbelow(UNTRUSTED_UID_RANGE[1] - UNTRUSTED_UID_RANGE[0] - 1)
                               + UNTRUSTED_UID_RANGE[0] for _ in range(2))
        supervisor_uid += supervisor_uid >= uid           # never B's uid
        settings = container_settings(self.config, self.image, uid, labels, supervisor_uid, self.fork_servers)
        settings["host_config"] = api.create_host_config(**settings["host_config"])
        container_id = api.create_container(**settings)["Id"]
        try:
            # Attach before start: nothing the zygote writes (its hello) can be missed.
            raw = api.attach_socket(container_id, params={"stdin": 1, "stdout": 1, "stderr": 0, "stream": 1})
            transport = AttachTransport(getattr(raw, "_sock", raw), keep_alive=raw,
                                        explain_eof=lambda: self._explain_exit(container_id))
            api.start(container_id)
        except docker.errors.DockerException:
            self._remove(container_id)
            raise
        with self._lock:
            self._containers[index] = container_id
            self.containers_started += 1

        def kill() -> None:
            with self._lock:
                if self._containers.get(index) == container_id:
                    del self._containers[index]
            transport.close()
            self._remove(container_id)

        def interrupt() -> None:
            """Cancellation: SIGKILL the container (its zygote, supervisor and program); the attach
            stream then ends and the pool removes and replaces the container."""
            import docker.errors

            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                api.kill(container_id)

        servers = len(self.fork_servers)
        memory = [self.config.container_memory_mb(Limits(), fork_servers=servers)]

        def prepare(request: ExecutionRequest) -> None:
            """The container's memory cgroup for this request (a ~25 ms API call, only when it changes)."""
            language = resolve_language(request.language, self.languages)
            wanted = self.config.container_memory_mb(request.limits, language, servers)
            if wanted == memory[0]:
                return
            try:
                api.update_container(container_id, mem_limit=f"{wanted}m", memswap_limit=f"{wanted}m")
            except docker.errors.DockerException as exc:
                raise ZygoteDied(f"cannot set the container's memory limit to {wanted} MB: {exc}") from None
            memory[0] = wanted

        return SlotHandle(transport=transport, kill=kill, description=f"container {container_id[:12]} (uid {uid})",
                          extra={"container_id": container_id}, alive=lambda: not transport.closed_by_peer(),
                          prepare=prepare, interrupt=interrupt)

    def _explain_exit(self, container_id: str) -> str:
        """Exit code, OOM flag and the zygote's last log lines of an ended container (for the error text)."""
        import docker.errors

        try:
            self._client.api.wait(container_id, timeout=5)
            state = self._client.api.inspect_container(container_id)["State"]
            logs = self._client.api.logs(container_id, stdout=False, stderr=True, tail=8).decode("utf-8", "replace")
        except (docker.errors.DockerException, OSError) as exc:   # already removed, or the wait timed out
            return f"no details ({type(exc).__name__})"
        return (f"exit code {state.get('ExitCode')}{', OOM-killed' if state.get('OOMKilled') else ''}; "
                f"stderr: {logs.strip()[-1500:] or '(empty)'}")

    def _remove(self, container_id: str) -> None:
        import docker.errors

        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):   # gone, or its removal is under way
            self._client.api.remove_container(container_id, force=True)

    def container_ids(self) -> list[str]:
        """The live containers of this executor (one per started slot)."""
        with self._lock:
            return list(self._containers.values())

    # -- Executor protocol -----------------------------------------------------------------------
    @property
    def concurrency(self) -> int:
        return self.config.concurrency

    @property
    def stats(self):
        return self._pool.stats

    @property
    def hellos(self) -> list[dict]:
        return self._pool.hellos

    @property
    def compile_cache(self):
        """Compile failures answered without starting a compiler (hits, misses): sandbox/compile_cache.py."""
        return self._pool.compile_cache

    @property
    def artifact_cache(self) -> ArtifactCache | None:
        """Successful compiles answered without a compiler (hits, misses, bytes): sandbox/compile_artifacts.py."""
        return self._pool.artifact_cache

    def language_versions(self) -> dict[str, str]:
        """Language name -> its toolchain's version in the runner image (recorded when it was built)."""
        return dict(self._versions)

    def execute(self, request: ExecutionRequest, cancel: Cancellation | None = None) -> ExecutionResult:
        return self._pool.execute(request, cancel)

    def execute_batch(self, requests: Sequence[ExecutionRequest]) -> list[ExecutionResult]:
        return self._pool.execute_batch(requests)

    def close(self) -> None:
        """Remove every container of this executor. Idempotent."""
        self._pool.close()
        for container_id in self.container_ids():
            self._remove(container_id)
        with self._lock:
            self._containers.clear()

    def __enter__(self) -> DockerExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
