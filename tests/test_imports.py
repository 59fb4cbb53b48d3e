"""The package's layers point one way. Every import of every module (at module level or
inside a function; ``if TYPE_CHECKING:`` blocks aside), read with ``ast``, makes a graph:

* without a cycle;
* in which nothing imports ``cli``;
* in which ``cli`` reaches the library through ``api`` alone: of the package it imports
  ``api`` (every computation: layouts, sweeps, diffs, scans, audits, the values as typed, the
  cross-checks), and besides it only ``options`` (the shared click flags), ``reports`` and
  its modules (printing what ``api`` returned) and ``errors`` (what it turns into exit
  codes);
* in which the facade (``__init__``) imports ``api`` alone, and no module of the library
  imports ``api`` (it is the top of the library: only the facade and ``cli`` use it);
* whose edges follow the README's module map (:data:`LAYERS`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import cutlass_layout

PKG = Path(cutlass_layout.__file__).resolve().parent
NAME = "cutlass_layout"

#: Modules that import nothing from the package (everything else builds on them; the cache
#: and the input readers build on the errors alone).
LEAVES = {"cutlass_layout.model", "cutlass_layout.errors", "cutlass_layout.pipeline.runner",
          "cutlass_layout.sources._flashinfer_harness", "cutlass_layout.subjects.launchers"}
#: Modules that import the errors and nothing else (the executors: a Dask cluster's).
ON_ERRORS = {"cutlass_layout.pipeline.cache", "cutlass_layout.sources.inputs",
             "cutlass_layout.pipeline.executors"}
#: What the frontends may import: the model, and the leaves for errors and cache folders.
FRONTEND_DEPS = {"cutlass_layout.model", "cutlass_layout.errors", "cutlass_layout.pipeline.cache"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([NAME, *parts])] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(mod: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int, str | None]]:
    """(imported module, line, name imported from the package itself or None) for every
    import of ``mod`` that lands inside the package."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    out = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                for a in child.names:
                    if a.name == NAME or a.name.startswith(NAME + "."):
                        out.append((a.name, child.lineno, None))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    target = ".".join(base[: len(base) - child.level + 1] + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target != NAME and not target.startswith(NAME + "."):
                    continue
                for a in child.names:
                    sub = f"{target}.{a.name}"
                    if sub in modules:
                        out.append((sub, child.lineno, a.name if target == NAME else None))
                    else:
                        out.append((target, child.lineno, a.name if target == NAME else None))
            visit(child)

    visit(tree)
    return out


def _graph():
    modules = _modules()
    return modules, {m: _imports(m, p, modules) for m, p in modules.items()}


def test_no_import_cycle():
    modules, graph = _graph()
    edges = {m: {t for t, _, _ in imps if t != m and t != NAME} for m, imps in graph.items()}
    # a module that imports from the package itself (``from . import x``) depends on the facade
    for m, imps in graph.items():
        if m != NAME and any(t == NAME for t, _, _ in imps):
            edges[m].add(NAME)
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                dfs(t)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            dfs(m)


def test_nothing_imports_the_cli():
    _, graph = _graph()
    bad = [f"{m} (line {line})" for m, imps in graph.items() if m != f"{NAME}.cli"
           for t, line, _ in imps if t == f"{NAME}.cli"]
    assert not bad, "imports cutlass_layout.cli: " + ", ".join(bad)


#: What ``cli`` may import from the package besides ``api`` (and ``reports.*``).
CLI_MAY_IMPORT = {f"{NAME}.api", f"{NAME}.options", f"{NAME}.errors", f"{NAME}.reports"}


def test_cli_calls_the_library_through_api_only():
    _, graph = _graph()
    bad = sorted({f"{t} (line {line})" for t, line, _ in graph[f"{NAME}.cli"]
                  if t not in CLI_MAY_IMPORT and not t.startswith(f"{NAME}.reports.")})
    assert not bad, "cli imports the library beside cutlass_layout.api: " + ", ".join(bad)
    assert f"{NAME}.api" in {t for t, _, _ in graph[f"{NAME}.cli"]}


def test_the_facade_is_api_and_api_is_the_top():
    _, graph = _graph()
    assert {t for t, _, _ in graph[NAME]} == {f"{NAME}.api"}, "__init__ re-exports api alone"
    users = sorted({m for m, imps in graph.items() for t, _, _ in imps if t == f"{NAME}.api"})
    assert users == [NAME, f"{NAME}.cli"], f"only the facade and cli import api: {users}"


def test_layers():
    _, graph = _graph()
    for m in LEAVES:
        assert not graph[m], f"{m} must import nothing from the package: {graph[m]}"
    for m in ON_ERRORS:
        extra = {t for t, _, _ in graph[m]} - {"cutlass_layout.errors"}
        assert not extra, f"{m} must import only the errors from the package: {sorted(extra)}"
    for m, imps in graph.items():
        if m.startswith(f"{NAME}.frontends."):
            extra = {t for t, _, _ in imps} - FRONTEND_DEPS
            assert not extra, f"{m} imports {sorted(extra)}; frontends import only the model"


def test_no_module_reaches_a_command_through_the_facade():
    """``from . import sweep`` would get the facade's function, not the module."""
    _, graph = _graph()
    facade = set(cutlass_layout.__all__)
    bad = [f"{m}: from . import {name} (line {line})" for m, imps in graph.items() if m != NAME
           for _, line, name in imps if name is not None and name in facade]
    assert not bad, bad


#: The README's module map ("How it works"), bottom first: a module imports only modules of
#: its own layer or of layers before it.
LAYERS = [
    ["errors", "model", "pipeline", "pipeline.cache", "pipeline.runner", "pipeline.executors",
     "sources", "sources.inputs", "sources._flashinfer_harness", "sources._cutlass_library_harness"],
    ["subjects", "subjects.archs", "subjects.config", "sources.trees", "sources.cuda", "sources.flashinfer_jit",
     "subjects.mainloop2x"],
    ["frontends", "frontends.clang", "frontends.treesitter", "subjects.launchers", "subjects.probe", "subjects.grid",
     "subjects.shapes"],
    ["pipeline.engine", "checks", "checks.verify", "checks.nvcc_probe", "checks.gpu", "installs", "installs.kernels",
     "installs.candidates", "installs.fixes", "installs.kernel_library", "installs.moe_sm80", "installs.equivalence"],
    ["commands", "commands.sweep", "commands.diff", "commands.scan", "commands.audit", "commands.blocklist",
     "commands.library_audit", "commands.audit_nvcc", "commands.shard"],
    ["api"],
    [""],  # the facade, cutlass_layout/__init__.py
    ["reports", "reports.common", "reports.layout", "reports.sweep", "reports.diff", "reports.scan", "reports.plot",
     "reports.audit", "reports.library_audit"],
    ["options", "cli"],
]


def test_layers_point_one_way():
    modules, graph = _graph()
    rank = {".".join(filter(None, [NAME, m])): i for i, layer in enumerate(LAYERS) for m in layer}
    missing = sorted(set(modules) ^ set(rank))
    assert not missing, (f"{missing}: add each module to LAYERS here and to the README's module "
                         "map (How it works), in the layer of what it imports")
    bad = [f"{m} (layer {rank[m]}) imports {t} (layer {rank[t]})"
           for m, imps in graph.items() for t, _, _ in imps if rank[t] > rank[m]]
    assert not bad, bad


#: The folders (and the modules left in the package root), in the order they build on each
#: other: a module uses only its own folder's and earlier folders' modules, and the shared
#: services of :data:`SERVICES`, which anyone may use (they import nothing but the errors).
FOLDERS = [
    ["errors", "model"],
    ["sources", "subjects", "frontends"],  # where a kernel comes from; what is laid out; the parsers
    ["pipeline"],  # the one engine and its scheduler
    ["installs", "checks"],  # the kernels an install builds; nvcc and GPU cross-checks
    ["commands"],
    ["api"],
    [""],  # the facade
    ["reports"],
    ["options", "cli"],
]
SERVICES = {f"{NAME}.pipeline.cache", f"{NAME}.pipeline.runner", f"{NAME}.pipeline.executors",
            f"{NAME}.sources.inputs"}


def _folder(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_folders_name_the_layers():
    """Only the base (model, errors) and the front door (api, the facade, options, cli) lie
    in the package root; every other module sits in the folder of its layer, and folders
    point one way."""
    modules, graph = _graph()
    rank = {f: i for i, layer in enumerate(FOLDERS) for f in layer}
    flat = sorted(m for m, p in modules.items() if p.parent == PKG and p.name != "__init__.py")
    assert flat == [f"{NAME}.{m}" for m in ("api", "cli", "errors", "model", "options")], flat
    missing = sorted({_folder(m) for m in modules} - set(rank))
    assert not missing, f"folders {missing}: add them to FOLDERS here and to the README's module map"
    bad = [f"{m} imports {t}" for m, imps in graph.items() for t, _, _ in imps
           if t != NAME and t not in SERVICES and rank[_folder(t)] > rank[_folder(m)]]
    assert not bad, bad
    for m in SERVICES:
        assert {t for t, _, _ in graph[m]} <= {f"{NAME}.errors"}, f"{m} is a service: it imports only the errors"
