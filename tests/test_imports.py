"""The package's folders are its layers, and they point one way. Every import of every module
(at module level or inside a function; ``if TYPE_CHECKING:`` blocks aside), read with ``ast``,
makes a graph:

* without a cycle;
* in which nothing imports ``cli`` (but ``__main__``, ``python -m cutlass_layout``);
* in which ``cli`` reaches the library through ``api`` alone: of the package it imports
  ``api`` (every computation), and besides it only ``options`` (the shared click flags),
  ``reports`` (printing what ``api`` returned) and ``errors`` (what it turns into exit codes);
* in which the facade (``__init__``) imports ``api`` alone, and no module of the library
  imports ``api``;
* whose edges go from a folder to itself or to a folder before it in :data:`FOLDERS`, the
  one ordered list of layers, with no exceptions;
* in which ``clang.cindex`` is imported only in ``cpp/`` (the one reader of C++), and no
  private name (``_x``) is imported from another module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cutlass_layout

PKG = Path(cutlass_layout.__file__).resolve().parent
NAME = "cutlass_layout"


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
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


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
                cycle = stack[stack.index(t) :] + [t]
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
    bad = [
        f"{m} (line {line})"
        for m, imps in graph.items()
        if m not in (f"{NAME}.cli", f"{NAME}.__main__")
        for t, line, _ in imps
        if t == f"{NAME}.cli"
    ]
    assert not bad, "imports cutlass_layout.cli: " + ", ".join(bad)


#: What ``cli`` may import from the package besides ``api`` (and ``reports.*``).
CLI_MAY_IMPORT = {f"{NAME}.api", f"{NAME}.options", f"{NAME}.errors", f"{NAME}.reports"}


def test_cli_calls_the_library_through_api_only():
    _, graph = _graph()
    bad = sorted(
        {
            f"{t} (line {line})"
            for t, line, _ in graph[f"{NAME}.cli"]
            if t not in CLI_MAY_IMPORT and not t.startswith(f"{NAME}.reports.")
        }
    )
    assert not bad, "cli imports the library beside cutlass_layout.api: " + ", ".join(bad)
    assert f"{NAME}.api" in {t for t, _, _ in graph[f"{NAME}.cli"]}


def test_the_facade_is_api_and_api_is_the_top():
    _, graph = _graph()
    assert {t for t, _, _ in graph[NAME]} == {f"{NAME}.api"}, "__init__ re-exports api alone"
    users = sorted({m for m, imps in graph.items() for t, _, _ in imps if t == f"{NAME}.api"})
    assert users == [NAME, f"{NAME}.cli"], f"only the facade and cli import api: {users}"


def test_no_module_reaches_a_command_through_the_facade():
    """``from . import sweep`` would get the facade's function, not the module."""
    _, graph = _graph()
    facade = set(cutlass_layout.__all__)
    bad = [
        f"{m}: from . import {name} (line {line})"
        for m, imps in graph.items()
        if m != NAME
        for _, line, name in imps
        if name is not None and name in facade
    ]
    assert not bad, bad


#: The folders (and the modules left in the package root), bottom first: a module imports only
#: modules of its own folder or of folders before it.
FOLDERS = [
    "errors",  # the errors every layer raises
    "core",  # bottom services: cache and key, files and limits, pool, progress, Dask
    "model",  # the data model: what every command returns
    "cpp",  # the one reader of C++: libclang, tree-sitter, text-level C++
    "subjects",  # what is laid out: configs, user types, probe text, the arch table
    "sources",  # where a kernel comes from: trees, wheels, installs, checkouts, the JIT harness
    "engine",  # the one engine
    "installs",  # what flashinfer, TensorRT-LLM and cutlass_library build
    "checks",  # nvcc and GPU cross-checks
    "commands",  # the use cases
    "reports",  # tables, JSON, CSV, Markdown, GitHub, plots
    "api",  # the library's top
    "",  # the facade, cutlass_layout/__init__.py
    "options",  # the command line's shared flags
    "cli",
    "__main__",  # python -m cutlass_layout: the command line
]


def _folder(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_folders_are_layers():
    """Only the errors and the front door (api, the facade, options, cli, __main__) lie in the
    package root; every other module sits in the folder of its layer, and every import points
    to its own folder or one before it."""
    modules, graph = _graph()
    rank = {f: i for i, f in enumerate(FOLDERS)}
    flat = sorted(m for m, p in modules.items() if p.parent == PKG and p.name != "__init__.py")
    assert flat == [f"{NAME}.{m}" for m in ("__main__", "api", "cli", "errors", "options")], flat
    missing = sorted({_folder(m) for m in modules} - set(rank))
    assert not missing, (
        f"folders {missing}: add them to FOLDERS here and to the module map of the README's How it works"
    )
    bad = [
        f"{m} (line {line}) imports {t}"
        for m, imps in graph.items()
        for t, line, _ in imps
        if rank[_folder(t)] > rank[_folder(m)]
    ]
    assert not bad, bad


def _raw_imports(path: Path):
    """(module, line, names) of every import statement of ``path``, wherever it stands."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno, []
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", node.lineno, [a.name for a in node.names]


def test_clang_cindex_only_in_cpp():
    """libclang is read in one folder: the one reader of C++."""
    modules = _modules()
    bad = [
        f"{m} (line {line})"
        for m, p in modules.items()
        if not m.startswith(f"{NAME}.cpp")
        for mod, line, names in _raw_imports(p)
        if mod == "clang" or mod.startswith("clang.")
    ]
    assert not bad, "imports clang outside cutlass_layout.cpp: " + ", ".join(bad)


def test_no_private_name_crosses_modules():
    """A name that starts with one underscore is its module's own."""
    modules, graph = _graph()
    bad = []
    for m, p in modules.items():
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(NAME)):
                bad += [
                    f"{m} (line {node.lineno}): {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not bad, "private names imported from another module: " + ", ".join(bad)


def test_the_pool_is_made_by_the_one_scheduler():
    """Work is scheduled in one place: ``Pool(...)`` (the one process pool) is constructed only
    by :mod:`cutlass_layout.engine.schedule`; commands submit tasks to a ``Schedule``."""
    modules = _modules()
    bad = []
    for m, p in modules.items():
        if m == f"{NAME}.engine.schedule":
            continue
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if name == "Pool":
                    bad.append(f"{m} (line {node.lineno})")
    assert not bad, "constructs a Pool outside engine.schedule: " + ", ".join(bad)


def test_no_function_import_shadows_a_module_name():
    """A name imported inside a function is not also one of its module's own top-level names
    (``from ..core.cache import KINDS`` inside ``moe_sm80`` once hid its element-kind table of
    the same name, and every SM80-path tactic was named by its C++ type)."""
    bad = []
    for m, p in _modules().items():
        tree = ast.parse(p.read_text(), str(p))
        own = set()
        for n in tree.body:
            if isinstance(n, ast.Assign):
                own |= {t.id for t in n.targets if isinstance(t, ast.Name)}
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                own.add(n.target.id)
            elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                own.add(n.name)
        for f in ast.walk(tree):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bad += [
                    f"{m}.{f.name} (line {n.lineno}): {a.asname or a.name}"
                    for n in ast.walk(f)
                    if isinstance(n, ast.ImportFrom)
                    for a in n.names
                    if (a.asname or a.name) in own
                ]
    assert not bad, "a function's import hides a module-level name: " + ", ".join(bad)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_uses(path: Path) -> list[str]:
    """Where the test file ``path`` reaches a private name of the package: ``from cutlass_layout...
    import _x``, ``m._x`` of a name it imported from the package, ``setattr(m, "_x", ...)``."""
    tree = ast.parse(path.read_text(), str(path))
    bound, out = set(), []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith(NAME):
            bound |= {a.asname or a.name for a in n.names}
            out += [f"{path.name}:{n.lineno} imports {a.name}" for a in n.names if _private(a.name)]
        elif isinstance(n, ast.Import):
            bound |= {(a.asname or a.name).split(".")[0] for a in n.names if a.name.startswith(NAME)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and _private(n.attr):
            base = n.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                out.append(f"{path.name}:{n.lineno} {ast.unparse(n)}")
        elif (
            isinstance(n, ast.Call)
            and ast.unparse(n.func).endswith("setattr")
            and len(n.args) > 1
            and isinstance(n.args[1], ast.Constant)
            and _private(str(n.args[1].value))
        ):
            out.append(f"{path.name}:{n.lineno} setattr {n.args[1].value}")
    return out


def test_tests_use_no_private_name():
    """Tests reach the package through public names only (issue 45): a seam a test needs (a
    function it counts calls of, a table it reads) is public in its module, with a docstring."""
    tests = Path(__file__).resolve().parent
    bad = [use for p in sorted(tests.glob("*.py")) for use in _private_uses(p)]
    assert not bad, "tests use private names: " + ", ".join(bad)
