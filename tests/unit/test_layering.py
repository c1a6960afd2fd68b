"""The layers of DESIGN.md hold, folder by folder, and no two modules of ours import each other.

Every import of our own packages is read from the source (``ast``), those inside functions
included: a lazy import is still a dependency, and a cycle that only shows at run time is still
a cycle. ``from pkg import name`` counts as an import of ``pkg.name`` when that is a module,
relative imports are resolved, and a package's ``__init__`` is a module of its own (``sandbox``
is the sandbox's public API; ``sandbox.factory`` is one of its internals).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Where each of our top-level packages lives; ``reward`` is the generated stubs, built from proto/.
PACKAGE_DIRS = {"reward": "proto/reward", "reward_core": "reward_core", "reward_service": "reward_service",
                "sandbox": "sandbox", "trainer_client": "trainer_client"}
OURS = tuple(PACKAGE_DIRS)
CORE = ("reward_core", "reward")  # the core layer of DESIGN.md: reward_core (its clients included) and the stubs


@dataclass(frozen=True)
class Import:
    path: str  # the importing file, relative to the repository root
    line: int
    target: str  # the module imported, resolved (``pkg.name`` when ``name`` is a submodule)
    lazy: bool  # inside a function: runs when called, not when the importing module loads

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.target}" + (" (inside a function)" if self.lazy else "")


def within(module: str, name: str) -> bool:
    """Whether ``module`` is ``name`` or one of its submodules."""
    return module == name or module.startswith(name + ".")


def module_name(rel: str) -> str:
    """``reward_service/tasks/__init__.py`` -> ``reward_service.tasks``; ``proto/reward/v1/x.py`` -> ``reward.v1.x``."""
    parts = list(Path(rel.removeprefix("proto/")).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def our_files() -> dict[str, str]:
    """Module name -> file (relative to the root) for every Python file of our packages."""
    files = {}
    for folder in PACKAGE_DIRS.values():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            files[module_name(rel)] = rel
    return files


def read_imports(source: str, rel: str, modules: set[str]) -> list[Import]:
    """Imports of our packages anywhere in ``source`` (the file ``rel``), resolved against ``modules``."""
    importer = module_name(rel)
    package = importer if rel.endswith("__init__.py") else importer.rpartition(".")[0]
    found = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            targets: list[str] = []
            if isinstance(child, ast.Import):
                targets = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parent = package.split(".")[:len(package.split(".")) - (child.level - 1)]
                    base = ".".join(parent + ([child.module] if child.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in child.names]
            found.extend(Import(rel, child.lineno, t, lazy) for t in dict.fromkeys(targets) if t.split(".")[0] in OURS)
            visit(child, lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source), lazy=False)
    return found


FILES = our_files()
IMPORTS = [imp for rel in FILES.values()
           for imp in read_imports((ROOT / rel).read_text(encoding="utf-8"), rel, set(FILES))]


@dataclass(frozen=True)
class Rule:
    """What the files under ``scope`` (a folder ending in ``/``, or one file) may import of ours."""

    scope: str
    may_import: tuple[str, ...]  # packages or modules, each with its submodules (the scope itself always)
    why: str
    public_api: tuple[str, ...] = ()  # packages only whose ``__init__`` may be imported, not their submodules

    def covers(self, rel: str) -> bool:
        return rel.startswith(self.scope) if self.scope.endswith("/") else rel == self.scope

    def allows(self, target: str) -> bool:
        if self.scope.endswith("/"):
            itself = within(target, module_name(self.scope + "__init__.py"))
        else:
            itself = target == module_name(self.scope)
        return itself or any(within(target, name) for name in self.may_import) or target in self.public_api


RULES = (
    Rule("proto/reward/", (), "the generated stubs are the contract itself"),
    Rule("reward_core/", ("reward",), "the core, its clients included, sits on the generated stubs alone"),
    Rule("reward_service/pool/", (), "the worker pool is generic: it knows no task and no contract"),
    Rule("reward_service/verifiers/", (), "verifiers are pure functions of (completion, reference, options)"),
    Rule("reward_service/task_api.py", ("reward_core",), "the task plugin contract rests on the core alone"),
    Rule("reward_service/tasks/", ("reward_core", "reward_service.task_api", "reward_service.verifiers",
                                   "reward_service.judges"),
         "a task uses the core and its clients, the verifiers, the judge client layer, and the sandbox "
         "through its package API only", public_api=("sandbox",)),
    Rule("reward_service/environments/", CORE + ("reward_service.task_api", "reward_service.tasks",
                                                 "reward_service.verifiers", "reward_service.pool",
                                                 "reward_service.router.scoring", "reward_service.router.config",
                                                 "reward_service.router.environments_config",
                                                 "reward_service.router.hosted_services",
                                                 "reward_service.router.server"),
         "environments run episodes on the core's contract, verify answers through the router's scorer (its task "
         "registry), evaluate on the worker pool, use the sandbox through its package API only, and add their "
         "service to the router's server (hosting.py)", public_api=("sandbox",)),
    Rule("reward_service/judges/", ("reward_core",),
         "the judge client layer (and the local judge endpoint) is a client on the core"),
    Rule("reward_service/rm/", CORE, "the reward-model server is a service on the core"),
    Rule("reward_service/http_door/", CORE, "the HTTP door reaches the services through the core's clients"),
    Rule("reward_service/router/", CORE + ("reward_service.pool", "reward_service.task_api", "reward_service.tasks",
                                           "reward_service.verifiers", "reward_service.judges", "sandbox",
                                           "reward_service.jsonl_io"),
         "the router runs tasks on the pool and embeds the sandbox servicer; services of layers above it "
         "(environments) add themselves to its server (router/hosted_services.py); rescore's workers "
         "(router/rows_from_cache.py) write result lines as jsonl_io does (a module on the core alone)"),
    Rule("reward_service/cli.py", CORE + ("reward_service", "trainer_client"),
         "the one place that knows every program (imported lazily: see test_the_cli_imports_programs_lazily)"),
    Rule("reward_service/status_cli.py", CORE, "the status command is a client of a running server"),
    Rule("reward_service/inspector/", CORE, "the rollout inspector reads files of the contract's shape"),
    Rule("reward_service/jsonl_io.py", CORE, "reading and writing rollouts needs only the contract"),
    Rule("reward_service/rescore.py", CORE + ("reward_service.jsonl_io", "reward_service.rescore_read",
                                              "reward_service.rescore_report"),
         "re-scoring reads and writes results files; the CLI hands it the scorer (in-process or remote)"),
    Rule("reward_service/rescore_read.py", CORE + ("reward_service.jsonl_io", "reward_service.rescore_report"),
         "reading a results file needs the line format and the verdict type"),
    Rule("reward_service/rescore_report.py", CORE, "the flip report compares verdicts: pure, on the contract"),
    Rule("reward_service/__init__.py", (), "importing the package starts and loads nothing"),
    Rule("reward_service/__main__.py", ("reward_service.cli",), "python -m reward_service is the CLI"),
    Rule("sandbox/", CORE, "the sandbox is a service on the core"),
    Rule("trainer_client/", CORE, "the client library and trainers need only the core"),
)

# What cli.py may import when it loads: the core, and the config modules its commands' flags are built
# from (plain dataclasses); every program (the servers, the HTTP door, scoring, the client) is imported
# inside the command that runs it.
CLI_EAGER = CORE + ("reward_service.jsonl_io", "reward_service.status_cli", "reward_service.router.rewards_config",
                    "reward_service.router.config", "reward_service.rm.config")

# The client library: what a trainer on a GPU node imports (the package, and the one client per service
# of reward_core/clients/). It needs only the core: no server package and no torch.
CLIENT_LIBRARY = ("trainer_client",) + tuple(m for m in FILES if within(m, "reward_core.clients"))


def rule_for(rel: str) -> Rule | None:
    """The most specific rule that covers ``rel``."""
    return max((r for r in RULES if r.covers(rel)), key=lambda r: len(r.scope), default=None)


def test_every_file_of_ours_has_a_layering_rule() -> None:
    missing = [rel for rel in FILES.values() if rule_for(rel) is None]
    assert not missing, "no rule in RULES of tests/unit/test_layering.py covers:\n" + "\n".join(missing)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.scope)
def test_a_folder_imports_only_what_its_rule_allows(rule: Rule) -> None:
    wrong = [imp for imp in IMPORTS if rule_for(imp.path) == rule and not rule.allows(imp.target)]
    allowed = ", ".join(rule.may_import + tuple(f"{p} (the package only)" for p in rule.public_api)) or "nothing"
    assert not wrong, (f"{rule.scope} may import only itself and {allowed} ({rule.why}):\n"
                       + "\n".join(map(str, wrong)))


def test_the_router_never_imports_the_environments() -> None:
    # The environments verify answers with the router's scorer: they sit above it, so the router (its
    # server and config included, lazily or not) reaches them only through the add-ons it is handed.
    upward = [imp for imp in IMPORTS if imp.path.startswith("reward_service/router/")
              and within(imp.target, "reward_service.environments")]
    assert not upward, ("the router imports the environments (a layer above it); take them as an add-on "
                        "(reward_service/router/hosted_services.py) instead:\n" + "\n".join(map(str, upward)))


def test_no_package_exports_a_name_that_is_also_its_submodule() -> None:
    # Importing ``pkg.name`` rebinds the package's attribute ``name`` to the module, so an exported
    # function of that name turns into the module once anything imports the submodule.
    clashes = []
    for module, rel in FILES.items():
        if not rel.endswith("__init__.py"):
            continue
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                names = [a.asname or a.name for a in node.names
                         if f"{module}.{a.asname or a.name}" not in {imp.target for imp in IMPORTS
                                                                    if imp.path == rel and imp.line == node.lineno}]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            else:
                continue
            clashes += [f"{rel}:{node.lineno} binds {name}, also the submodule {module}.{name}"
                        for name in names if f"{module}.{name}" in FILES]
    assert not clashes, "rename one of each pair:\n" + "\n".join(clashes)


def test_the_cli_imports_programs_lazily() -> None:
    eager = [imp for imp in IMPORTS if imp.path == "reward_service/cli.py" and not imp.lazy
             and not any(within(imp.target, name) for name in CLI_EAGER)]
    assert not eager, ("reward_service/cli.py imports these at module level; import a program inside the "
                       "command that runs it:\n" + "\n".join(map(str, eager)))


def test_loading_the_cli_loads_no_heavy_stack() -> None:
    code = ("import sys\nimport reward_service.cli\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'torch', 'transformers', 'starlette', 'uvicorn', 'trainer_client'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of ``graph`` (iterative: no recursion limit to hit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def one_cycle(component: list[str], edges: dict[tuple[str, str], Import]) -> list[Import]:
    """The shortest cycle through the component's first module, as the imports that make it."""
    start = component[0]
    came_from: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for (a, b), imp in sorted(edges.items()):
                if a != node or b not in component:
                    continue
                if b == start:
                    path = [imp]
                    while path[0].path != FILES[start]:
                        path.insert(0, came_from[module_name(path[0].path)])
                    return path
                if b not in came_from:
                    came_from[b] = imp
                    following.append(b)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def test_no_import_cycles_between_our_modules() -> None:
    edges = {(module_name(imp.path), imp.target): imp for imp in reversed(IMPORTS)
             if imp.target in FILES and imp.target != module_name(imp.path)}
    graph: dict[str, set[str]] = {m: set() for m in FILES}
    for a, b in edges:
        graph[a].add(b)
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    report = [f"cycle among {', '.join(c)}:\n  " + "\n  ".join(map(str, one_cycle(c, edges))) for c in cycles]
    assert not cycles, "import cycles between our modules (lazy imports count):\n" + "\n".join(report)


def test_the_client_library_imports_without_the_server_packages() -> None:
    code = ("import sys\n"
            + "".join(f"import {m}\n" for m in CLIENT_LIBRARY)
            + "print(sorted({m.split('.')[0] for m in sys.modules} & {'reward_service', 'sandbox', 'torch'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_import_reader_resolves_submodules_relative_and_lazy_imports() -> None:
    source = ("from . import grader\nfrom .errors import MathParseError\nfrom sandbox import create_executor\n"
              "def f():\n    import sandbox.factory\n")
    modules = {"reward_service.verifiers.math.grader", "reward_service.verifiers.math.errors", "sandbox",
               "sandbox.factory"}
    found = read_imports(source, "reward_service/verifiers/math/__init__.py", modules)
    assert [(i.target, i.lazy) for i in found] == [
        ("reward_service.verifiers.math.grader", False), ("reward_service.verifiers.math.errors", False),
        ("sandbox", False), ("sandbox.factory", True)]


def test_strongly_connected_groups_the_modules_of_a_cycle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"], ["d"]]
