"""Run an installed flashinfer's own JIT module builders, without flashinfer's runtime.

Run by path in a sandboxed child process (``python _flashinfer_harness.py REQUEST``: a JSON
request in a file, a JSON answer on stdout; :func:`cutlass_layout.sources.flashinfer_jit.jit_modules`
starts it with a scrubbed environment, stdin closed, in a scratch folder); it imports nothing
from cutlass_layout. The request names the install's ``flashinfer`` package directory, a
folder to generate into, the target arch, the builder functions to call (``[module,
function]``, e.g. ``["flashinfer.jit.fused_moe", "gen_cutlass_fused_moe_sm120_module"]``) and
the limits (``{"cpu_s": N, "memory_mb": M}``): :func:`set_limits` applies them before any of
the install's code runs. A run out of memory exits :data:`EXIT_MEMORY`; past its CPU time the
kernel stops it (SIGXCPU, then SIGKILL).

What runs is the install's code: the builder functions themselves, their module, the
TensorRT-LLM kernel generator they call (``flashinfer/jit/gemm/cutlass/generate_kernels.py``
with its ``cutlass_library.py``), flashinfer's ``jit/utils.py`` and its jinja templates. What
is stood in for is flashinfer's runtime around them, which needs a GPU build environment:

* ``flashinfer.jit.core.gen_jit_spec`` records its arguments (module name, sources, flags,
  include paths) instead of preparing a ninja build; the ``*_nvcc_flags`` lists and
  ``common_nvcc_flags`` are read from ``jit/core.py``'s own assignments;
* ``current_compilation_context.get_nvcc_flags_list`` gives the target arch's ``-gencode``
  flag plus ``CompilationContext.COMMON_NVCC_FLAGS`` read from ``compilation_context.py``;
* ``flashinfer.jit.env``: its path constants (``FLASHINFER_CSRC_DIR``,
  ``CUTLASS_INCLUDE_DIRS``, ...) evaluated from ``jit/env.py``'s assignments, except the
  generated-source and workspace folders, which point into the request's folder;
* ``is_cuda_version_at_least`` answers for the CUDA version given in the request;
* every other module flashinfer imports and this machine lacks (torch, tvm_ffi, ...), and
  flashinfer's own runtime modules, are permissive stand-ins.

A flashinfer module that is data only (:func:`data_only`: a docstring, imports of ``typing``
or ``__future__`` and assignments of literals, nothing else, e.g. 0.7.4's
``jit/gemm/svdquant_sm120_configs.py``, the 31 tactic names the SM120 SVDQuant builder loops
over) runs from the install too: it can compute nothing but its own constants.

Packages under ``flashinfer`` are made without running their ``__init__.py``.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import pathlib
import resource
import sys
import traceback
import types
from typing import Any

#: flashinfer modules run from the install (the rest are stand-ins): the builder modules
#: named in the request, the data-only ones (:func:`data_only`), and these
REAL = ("flashinfer.jit.utils", "flashinfer.jit.gemm.cutlass")
#: third-party modules that must be the real ones (a stand-in would render templates wrong)
NEVER_STUB = ("jinja2", "markupsafe")
#: flashinfer modules replaced by this harness's implementations
OWN = ("flashinfer.jit.core", "flashinfer.jit.env", "flashinfer.jit.cpp_ext", "flashinfer.compilation_context")
#: Exit status of a run that ran out of its address space (a MemoryError anywhere)
EXIT_MEMORY = 3
#: Seconds of CPU between the soft limit (SIGXCPU, which ends the process) and the hard one
#: (SIGKILL, for code that catches SIGXCPU)
CPU_GRACE_S = 2
#: The names of the stand-ins of flashinfer's own modules' values that the install's code
#: iterated (each yields nothing: what the builder meant to loop over was not run), in order
ITERATED: list[str] = []


class Anything:
    """A permissive stand-in: any attribute, call, index or iteration works. Attributes are
    memoised, so ``torch.float16`` is the same object each time (usable as a dict key)."""

    def __init__(self, name: str):
        self.__dict__["_name"] = name
        self.__dict__["_kids"] = {}

    def __getattr__(self, key):
        if key.startswith("__") and key.endswith("__"):
            raise AttributeError(key)
        kids = self.__dict__["_kids"]
        if key not in kids:
            kids[key] = Anything(f"{self._name}.{key}")
        return kids[key]

    def __call__(self, *args, **kwargs):
        return Anything(f"{self._name}()")

    def __getitem__(self, key):
        return Anything(f"{self._name}[]")

    def __iter__(self):
        name = self.__dict__["_name"]
        if name.startswith("flashinfer."):
            ITERATED.append(name)
        return iter(())

    def __bool__(self):
        return False

    def __mro_entries__(self, bases):
        return (object,)

    def __repr__(self):
        return f"<stand-in {self._name}>"


class StubModule(types.ModuleType):
    """A stand-in module: every attribute not set on it is an :class:`Anything` named
    ``module.attribute`` (memoised); dunder names are missing as usual."""

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__") and key.endswith("__"):
            raise AttributeError(key)
        value = Anything(f"{self.__name__}.{key}")
        setattr(self, key, value)
        return value


# ---------------------------------------------------------------------------------------
# reading flashinfer's own constants without running their modules
def data_only(path: pathlib.Path) -> bool:
    """Whether the flashinfer module at ``path`` holds data only, so running it can do nothing
    but bind its names: every top-level statement is a docstring, ``import typing`` / ``from
    typing import ...`` / ``from __future__ import ...``, or an assignment (annotated or not)
    of a literal (:func:`ast.literal_eval` accepts it) to plain names. Anything else (another
    import, a call, a function, a class, a loop), or a file that does not parse: False."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return False
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Import) and all(a.name == "typing" for a in stmt.names):
            continue
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module in ("typing", "__future__"):
            continue
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            value = stmt.value
        elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            value = stmt.value
        else:
            return False
        try:
            ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
    return True


def _eval(node, ns):
    """Evaluate a small expression: literals, lists, names in ``ns``, ``+``, path ``/``."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        out = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                out.extend(_eval(elt.value, ns))
            else:
                out.append(_eval(elt, ns))
        return out if isinstance(node, ast.List) else tuple(out)
    if isinstance(node, ast.Name):
        if node.id in ns:
            return ns[node.id]
        raise ValueError(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
        left, right = _eval(node.left, ns), _eval(node.right, ns)
        return left + right if isinstance(node.op, ast.Add) else left / right
    raise ValueError(ast.dump(node)[:60])


def constants(path: pathlib.Path, ns: dict, body=None) -> dict:
    """Module-level (or ``body``-level) assignments of ``path`` whose values :func:`_eval`
    can compute, in order; the others are left out."""
    targets: list[ast.Name]
    for stmt in body if body is not None else ast.parse(path.read_text()).body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            targets, value = [stmt.target], stmt.value
        elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            targets, value = [t for t in stmt.targets if isinstance(t, ast.Name)], stmt.value
        else:
            continue
        try:
            v = _eval(value, ns)
        except (ValueError, TypeError):
            continue
        for t in targets:
            ns[t.id] = v
    return ns


def class_constants(path: pathlib.Path, cls: str) -> dict:
    """:func:`constants` of the body of class ``cls`` in ``path`` (``{}`` when there is no
    such class)."""
    for stmt in ast.parse(path.read_text()).body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == cls:
            return constants(path, {}, stmt.body)
    return {}


# ---------------------------------------------------------------------------------------
class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves flashinfer's packages (without their __init__), this harness's own modules,
    and stand-ins for flashinfer's runtime modules and for anything not installed (the loader
    of the modules it finds, too)."""

    def __init__(self, root: pathlib.Path, real: set[str], own: dict):
        self.root, self.real, self.own = root, real, own
        self.stubbed: set[str] = set()

    def find_spec(self, name, path=None, target=None):
        if name in self.own:
            return importlib.machinery.ModuleSpec(name, self, is_package=False)
        if name == "flashinfer" or name.startswith("flashinfer."):
            rel = pathlib.Path(*name.split(".")[1:])
            folder = self.root / rel
            if folder.is_dir():
                spec = importlib.machinery.ModuleSpec(name, self, is_package=True)
                spec.submodule_search_locations = [str(folder)]
                return spec
            file = (self.root / rel).with_suffix(".py")
            if file.is_file() and (any(name == r or name.startswith(r + ".") for r in self.real) or data_only(file)):
                return importlib.util.spec_from_file_location(name, file)
            return importlib.machinery.ModuleSpec(name, self, is_package=False)
        if name.split(".")[0] in self.stubbed:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        if "." not in name and name not in NEVER_STUB:  # only when nothing else has it
            for finder in sys.meta_path:
                if finder is self:
                    continue
                try:
                    if finder.find_spec(name, path, target) is not None:
                        return None
                except Exception:
                    continue
            self.stubbed.add(name)
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        if spec.name in self.own:
            return self.own[spec.name]
        flashinfer_package = spec.name.split(".")[0] == "flashinfer" and spec.submodule_search_locations is not None
        mod = types.ModuleType(spec.name) if flashinfer_package else StubModule(spec.name)
        if spec.submodule_search_locations is not None:
            mod.__path__ = list(spec.submodule_search_locations)
        return mod

    def exec_module(self, module):
        pass


def _own_modules(root: pathlib.Path, out: pathlib.Path, arch: str, cuda: tuple[int, int], captured: list) -> dict:
    jit = root / "jit"
    major, minor = int(arch[:-1]), arch[-1]
    common = class_constants(root / "compilation_context.py", "CompilationContext").get("COMMON_NVCC_FLAGS", [])
    gencode = f"-gencode=arch=compute_{arch}a,code=sm_{arch}a"

    class Context:
        TARGET_CUDA_ARCHS = {(major // 10, f"{major % 10}{minor}a")}
        COMMON_NVCC_FLAGS = list(common)

        def get_nvcc_flags_list(self, supported_major_versions=None, **_):
            return [gencode] + list(common)

    def gen_jit_spec(
        name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None, **_
    ):
        captured.append(
            {
                "name": str(name),
                "sources": [str(s) for s in sources],
                "extra_cuda_cflags": [str(f) for f in extra_cuda_cflags or []],
                "extra_cflags": [str(f) for f in extra_cflags or []],
                "extra_include_paths": [str(p) for p in extra_include_paths or []],
            }
        )
        return Anything(f"JitSpec {name}")

    core = StubModule("flashinfer.jit.core")
    constants(jit / "core.py", core.__dict__)
    core.__dict__.update(gen_jit_spec=gen_jit_spec, current_compilation_context=Context(), JitSpec=Anything("JitSpec"))

    env = StubModule("flashinfer.jit.env")
    env.__dict__.update(constants(jit / "env.py", {"_package_root": root}))
    for key in (
        "FLASHINFER_GEN_SRC_DIR",
        "FLASHINFER_JIT_DIR",
        "FLASHINFER_WORKSPACE_DIR",
        "FLASHINFER_CACHE_DIR",
        "FLASHINFER_BASE_DIR",
    ):
        setattr(env, key, out / key.lower())
    env.__dict__["FLASHINFER_GEN_SRC_DIR"] = out / "generated"

    cpp = StubModule("flashinfer.jit.cpp_ext")
    cpp.__dict__.update(
        is_cuda_version_at_least=lambda v: tuple(int(x) for x in str(v).split(".")[:2]) <= cuda,
        host_compiler_is_gcc=lambda: True,
    )

    ctx = StubModule("flashinfer.compilation_context")
    ctx.__dict__["CompilationContext"] = Context
    return {m.__name__: m for m in (core, env, cpp, ctx)}


def _function(path: pathlib.Path, name: str):
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _env_refs(fn, env) -> list[str]:
    """The ``jit_env.NAME`` paths a function of ``cpp_ext.py`` names, in order."""
    out: list[str] = []
    nodes = sorted(
        ast.walk(fn) if fn is not None else (), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))
    )
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "jit_env":
            value = getattr(env, node.attr, None)
            for p in value if isinstance(value, list) else [value]:
                if isinstance(p, pathlib.Path) and str(p) not in out:
                    out.append(str(p))
    return out


def defaults(root: pathlib.Path, env) -> dict:
    """What flashinfer's build adds to every module (``gen_jit_spec`` in ``jit/core.py``, the
    ninja writer in ``jit/cpp_ext.py``): the ``-D`` flags of ``gen_jit_spec``'s CUDA flags
    (the non-debug branch), the vendored CCCL folders (``-I``, ``get_cccl_includes``) and the
    system include folders that are flashinfer's own (``-isystem``, ``get_system_includes``)."""
    jit = root / "jit"
    defines: list[str] = []
    fn = _function(jit / "core.py", "gen_jit_spec")
    for node in ast.walk(fn) if fn is not None else ():
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "debug":
            branch = node.orelse
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "cuda_cflags" for t in node.targets
        ):
            branch = [node]
        else:
            continue
        for sub in branch:
            for c in ast.walk(sub):
                if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.startswith("-D"):
                    if c.value not in defines:
                        defines.append(c.value)
    cpp = jit / "cpp_ext.py"
    return {
        "defines": defines,
        "cccl_include_dirs": _env_refs(_function(cpp, "get_cccl_includes"), env),
        "system_include_dirs": _env_refs(_function(cpp, "get_system_includes"), env),
    }


def set_limits(limits: dict) -> None:
    """Bound this process before the install's code runs: ``RLIMIT_CPU`` to
    ``limits["cpu_s"]`` seconds (hard limit :data:`CPU_GRACE_S` later), ``RLIMIT_AS`` to
    ``limits["memory_mb"]`` MiB, no core files. A hard limit already lower is kept."""

    def bound(which, soft, hard):
        _, old = resource.getrlimit(which)
        if old != resource.RLIM_INFINITY:
            soft, hard = min(soft, old), min(hard, old)
        resource.setrlimit(which, (soft, hard))

    bound(resource.RLIMIT_CORE, 0, 0)  # SIGXCPU would dump core into the scratch folder
    if limits.get("cpu_s"):
        cpu = int(limits["cpu_s"])
        bound(resource.RLIMIT_CPU, cpu, cpu + CPU_GRACE_S)
    if limits.get("memory_mb"):
        size = int(limits["memory_mb"]) << 20
        bound(resource.RLIMIT_AS, size, size)


def run(request: dict) -> dict:
    """Call the request's builders with the stand-ins installed: ``{"builders": [{module,
    function, error, specs, iterated}], "defaults": defaults(...)}``, ``specs`` the
    ``gen_jit_spec`` calls each made, ``error`` the install's exception in one line (the
    others still run), ``iterated`` the stand-ins of flashinfer's own values its call iterated
    (:data:`ITERATED`: a loop over a stand-in, which generated nothing).
    A :class:`MemoryError` ends the run."""
    root = pathlib.Path(request["root"])
    out = pathlib.Path(request["out"])
    arch = request["arch"]  # "120", "100", "90"
    cuda = tuple(request.get("cuda", (13, 0)))
    captured: list = []
    own = _own_modules(root, out, arch, cuda, captured)
    real = set(REAL) | {m for m, _ in request["builders"]}
    sys.meta_path.insert(0, Finder(root, real, own))
    sys.dont_write_bytecode = True  # nothing written into the install
    results = []
    for module, function in request["builders"]:
        before, seen = len(captured), len(ITERATED)
        entry = {"module": module, "function": function, "error": None, "specs": [], "iterated": []}
        try:
            fn = getattr(importlib.import_module(module), function)
            fn()
        except MemoryError:  # the limit's doing, not the install's bug: the run ends
            raise
        except BaseException as exc:  # the install's code failed: say so, go on
            tb = traceback.extract_tb(exc.__traceback__)
            where = next(
                (
                    f"{os.path.relpath(f.filename, root.parent)}:{f.lineno}"
                    for f in reversed(tb)
                    if str(root) in f.filename
                ),
                "",
            )  # flashinfer/...: no local path in a report
            entry["error"] = f"{type(exc).__name__}: {exc}" + (f" ({where})" if where else "")
        entry["specs"] = captured[before:]
        entry["iterated"] = list(dict.fromkeys(ITERATED[seen:]))
        results.append(entry)
    return {"builders": results, "defaults": defaults(root, own["flashinfer.jit.env"])}


def main(argv: list[str]) -> int:
    """Read the request file ``argv[1]``, apply its limits, write :func:`run`'s answer as
    JSON on stdout (what the install prints goes to stderr); out of memory: exit
    :data:`EXIT_MEMORY`."""
    with open(argv[1]) as f:  # the request: a file in the scratch folder (stdin is closed)
        request = json.load(f)
    set_limits(request.get("limits", {}))
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # whatever the install prints stays off the answer
    try:
        real_stdout.write(json.dumps(run(request)))
        real_stdout.flush()
    except MemoryError:
        os._exit(EXIT_MEMORY)  # nothing more is allocated: no traceback, no flush
    return 0


if __name__ == "__main__":
    os.environ.setdefault("FLASHINFER_DISABLE_JIT", "1")
    sys.exit(main(sys.argv))
