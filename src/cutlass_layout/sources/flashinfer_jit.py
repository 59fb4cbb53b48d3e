"""What an installed flashinfer's JIT builds for an arch: its modules, their sources, their flags.

Enumerated from the install's own code, never from a list here:

* :func:`survey` finds every module builder function of the arch by reading
  ``flashinfer/jit/**/*.py`` (functions named ``gen_...sm120...``), each with why it is not
  run, if it is not; :func:`arch_builders` are those run (no required argument, code that names
  CUTLASS and a GEMM: ``gen_cutlass_fused_moe_sm120_module`` in ``jit/fused_moe.py``, the
  dense and grouped ones in ``jit/gemm/core.py``);
* :func:`jit_modules` calls them in a child process (:mod:`cutlass_layout.sources._flashinfer_harness`),
  which runs flashinfer's own code (the TensorRT-LLM generator ``generate_kernels.py``, the
  jinja templates) into a folder of the user cache and records what each builder passes to
  ``gen_jit_spec``: the module name, its sources, its nvcc flags and include paths. The
  build's own defaults (``gen_jit_spec``'s defines, flashinfer's CCCL and system include
  folders) are read from ``jit/core.py`` and ``jit/cpp_ext.py``.

The child is a sandbox (:func:`run_harness`): the install's code runs as importing it would,
but with a scrubbed environment (:func:`child_env`: no tokens or credentials), stdin closed,
a fresh scratch folder of the cache as its working folder (removed after), and bounds on its
CPU time and address space (:func:`generator_limits`) besides the wall-clock
:data:`HARNESS_TIMEOUT`.

Nothing is written into the install: generated sources go to ``<cache>/flashinfer-jit/``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import resource
import shutil
import signal
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput, NothingForArch
from ..core.cache import KINDS, cache_dir, cache_root, file_sha256, result_key
from ..core.progress import step
from ._flashinfer_harness import EXIT_MEMORY
from ..core.files import read_text
from .flashinfer import FlashinferInstall

HARNESS = Path(__file__).with_name("_flashinfer_harness.py")
#: arch -> (regular expression a builder's name matches, the arch code the builds target)
ARCH_BUILDERS = {
    "sm120": (r"sm_?12[01](?!\d)", "120"),
    "sm121": (r"sm_?12[01](?!\d)", "120"),
    "sm100": (r"sm_?100(?!\d)", "100"),
    "sm103": (r"sm_?103(?!\d)", "103"),
    "sm90": (r"sm_?90(?!\d)", "90"),
}


def build_arch(arch: str) -> str:
    """The arch whose builds ``arch`` gets: the first of :data:`ARCH_BUILDERS` with the same
    builders and target (``sm121`` -> ``sm120``: SM121 parts run SM120's builds), so that
    both share one run of the builders, one folder of generated sources and every result
    keyed by them."""
    entry = ARCH_BUILDERS.get(arch)
    return next((a for a, e in ARCH_BUILDERS.items() if e == entry), arch) if entry else arch


#: Seconds the install's builders may take (the MoE generator takes a small fraction of it:
#: docs/performance.md).
HARNESS_TIMEOUT = 300
#: Default bounds of the builders' child process (see :func:`generator_limits`): orders of
#: magnitude above what the real harness runs of flashinfer-python 0.7.2.post1 and 0.7.4 take
#: (every builder for sm120, sm100 and sm90; measured: docs/performance.md), so they leave a
#: real generator a wide margin of CPU and memory.
GENERATOR_CPU_S = 120
GENERATOR_MEMORY_MB = 2048
#: The environment variables that override them (whole seconds, whole MiB)
CPU_ENV = "CUTLASS_LAYOUT_GENERATOR_CPU_S"
MEMORY_ENV = "CUTLASS_LAYOUT_GENERATOR_MEMORY_MB"
#: What the child needs of the real thing (the harness's NEVER_STUB): found where this process finds them
_REAL_IMPORTS = ("jinja2", "markupsafe")


@dataclass
class JitModule:
    """One module the install's JIT builds (one ``gen_jit_spec`` call).

    Attributes:
        name: the module name (``fused_moe_120``, ``fp4_gemm_cutlass_sm120``).
        builder: ``module.function`` that made it.
        sources: every source the module compiles (generated ones under the cache folder).
        generated: the sources written by the builder (the generator's instantiation files,
            rendered templates, copies), in the order the builder lists them.
        defines: ``-D``/``-U`` flags of its CUDA compile (the module's, then the build's
            defaults).
        include_dirs: ``-I`` folders (the module's, then flashinfer's CCCL); system_include_dirs:
            ``-isystem`` folders (flashinfer's own: its include/, csrc/, CUTLASS, spdlog).
        why_none: for a module that generates no source, why (:func:`why_nothing_generated`);
            None for one that generates some.
    """

    name: str
    builder: str
    sources: list[Path]
    generated: list[Path]
    defines: list[str]
    include_dirs: list[Path]
    system_include_dirs: list[Path]
    why_none: str | None = None

    def clang_flags(self) -> list[str]:
        """The module's own flags as clang takes them (after :func:`~cutlass_layout.cpp.clang.clang_flags`)."""
        out = list(self.defines)
        for d in self.include_dirs:
            out.append(f"-I{d}")
        for d in self.system_include_dirs:
            out += ["-isystem", str(d)]
        return out


@dataclass
class JitBuilds:
    """What :func:`jit_modules` found: the modules, and the builders that failed (``{builder:
    error}``, the install's exception in one line)."""

    modules: list[JitModule] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    builders: list[str] = field(default_factory=list)
    #: each generated source -> the SHA-256 of its bytes (checked when the answer is read back)
    digests: dict[str, str] = field(default_factory=dict)


def survey(install: FlashinferInstall, arch: str) -> list[tuple[str, str, str | None]]:
    """Every module builder the install has for ``arch``: ``(module, function, why not run)``
    of each function at the top level of ``flashinfer/jit/**/*.py`` named ``gen_...<arch>...``
    (:data:`ARCH_BUILDERS`' pattern), sorted by module. ``why not run`` is None for the
    builders :func:`jit_modules` runs (:func:`arch_builders`), else why not, one of: it takes
    arguments with no default (named: the audit cannot choose them), its code names no
    CUTLASS (not a CUTLASS kernel to the audit), its code names no GEMM (not a CUTLASS GEMM
    to the audit).

    Raises:
        BadInput: an arch this reader has no pattern for.
    """
    if arch not in ARCH_BUILDERS:
        raise BadInput(f"unknown arch {arch!r} for audit: choose {', '.join(ARCH_BUILDERS)}")
    pattern = re.compile(ARCH_BUILDERS[arch][0])
    jit = install.root / "jit"
    out = []
    for path in sorted(jit.rglob("*.py")):
        try:
            text = read_text(path, errors="replace")
            tree = ast.parse(text)
        except (BadInput, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        module = "flashinfer." + ".".join(path.relative_to(install.root).with_suffix("").parts)
        for node in tree.body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("gen_") and pattern.search(node.name)):
                continue
            out.append((module, node.name, _not_run(node, text)))
    return out


def _not_run(node: ast.FunctionDef, text: str) -> str | None:
    """Why :func:`jit_modules` does not run the builder ``node`` (None: it runs it)."""
    args = node.args.args
    required = [a.arg for a in args[: len(args) - len(node.args.defaults)]]
    required += [a.arg for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is None]
    if required:
        return f"it takes arguments with no default ({', '.join(required)}): the audit cannot choose them"
    code = (ast.get_source_segment(text, node) or "").lower()
    if "cutlass" not in code:
        return "its builder names no CUTLASS: not a CUTLASS kernel to the audit"
    if "gemm" not in code:
        return "its builder names no GEMM: not a CUTLASS GEMM to the audit"
    return None


def generator_limits() -> tuple[int, int]:
    """The bounds of the builders' child process: (CPU seconds, address-space MiB), from
    ``CUTLASS_LAYOUT_GENERATOR_CPU_S`` and ``CUTLASS_LAYOUT_GENERATOR_MEMORY_MB`` when set,
    else :data:`GENERATOR_CPU_S` and :data:`GENERATOR_MEMORY_MB` (read at each run).

    Raises:
        BadInput: a value that is not a positive whole number.
    """
    out = []
    for name, default, unit in ((CPU_ENV, GENERATOR_CPU_S, "seconds"), (MEMORY_ENV, GENERATOR_MEMORY_MB, "MiB")):
        text = os.environ.get(name, "").strip()
        if not text:
            out.append(default)
            continue
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise BadInput(f"{name}={text!r}: give a positive whole number of {unit}")
        out.append(value)
    return out[0], out[1]


def child_env(scratch: Path) -> dict[str, str]:
    """The whole environment of the builders' child process; nothing else of this process's
    environment is passed (no ``*_TOKEN``, ``AWS_*``, ``HF_*``, ``GITHUB_*``, proxies, ...):

    * ``PATH``, ``HOME``, ``LANG`` and ``LC_ALL`` (when set), as here;
    * ``CUTLASS_LAYOUT_CACHE``: the cache folder this process uses;
    * ``TMPDIR``: the run's scratch folder, so that the install's temporary files go with it;
    * ``PYTHONPATH``, only when jinja2 or markupsafe import here from a folder the interpreter
      does not search by itself (this process's own ``PYTHONPATH``, say): the harness needs the
      real ones (flashinfer's templates render through them; any other module missing in the
      child is stood in for). Just those folders.
    """
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "LC_ALL") if k in os.environ}
    env["CUTLASS_LAYOUT_CACHE"] = str(cache_root())
    env["TMPDIR"] = str(scratch)
    own = {os.path.realpath(p) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    extra = []
    for name in _REAL_IMPORTS:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            continue
        folder = os.path.dirname(os.path.dirname(spec.origin))  # above the package
        if os.path.realpath(folder) not in own and folder not in extra:
            extra.append(folder)
    if extra:
        env["PYTHONPATH"] = os.pathsep.join(extra)
    return env


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def run_harness(
    install: FlashinferInstall, arch: str, out: Path, cuda: tuple[int, int], wanted: list[tuple[str, str]]
) -> dict:
    """Run the harness on ``wanted`` in its sandbox (the module docstring) and return its answer.

    Raises:
        BadInput: as :func:`run_sandboxed`.
    """
    who = f"the install's generator (flashinfer's JIT module builders, {install.root})"
    request = {
        "root": str(install.root),
        "out": str(out),
        "arch": ARCH_BUILDERS[arch][1],
        "cuda": list(cuda),
        "builders": [list(b) for b in wanted],
    }
    return run_sandboxed(HARNESS, request, who)


def run_sandboxed(script: Path, request: dict, who: str) -> dict:
    """Run ``python SCRIPT REQUEST`` (a harness: a JSON request in a file, a JSON answer on
    stdout) in the sandbox of the module docstring: :func:`child_env`, stdin closed, a fresh
    scratch folder of the cache as its working folder (removed after), ``request["limits"]``
    set to :func:`generator_limits` (the harness applies them before any third-party code
    runs), and :data:`HARNESS_TIMEOUT`. ``who`` names the code that runs, in errors.

    Raises:
        BadInput: in one line, the child ran past its CPU-time limit, out of its address
            space, past :data:`HARNESS_TIMEOUT`, or failed (the last line of its stderr).
    """
    cpu_s, memory_mb = generator_limits()
    request = {**request, "limits": {"cpu_s": cpu_s, "memory_mb": memory_mb}}
    scratch = Path(tempfile.mkdtemp(prefix="run-", dir=cache_dir("generator-runs")))
    try:
        (scratch / "request.json").write_text(json.dumps(request))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            proc = subprocess.Popen(
                [sys.executable, str(script), str(scratch / "request.json")],
                cwd=scratch,
                env=child_env(scratch),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                start_new_session=True,
            )
        except OSError as exc:
            raise BadInput(f"cannot run {sys.executable} for {who}: {exc.strerror or exc}") from None
        with proc:
            try:
                stdout, stderr = proc.communicate(timeout=HARNESS_TIMEOUT)
            except BaseException as exc:  # past the timeout, or interrupted: stop its group
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
                if isinstance(exc, subprocess.TimeoutExpired):
                    raise BadInput(f"{who} timed out after {HARNESS_TIMEOUT} s") from None
                raise
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    rc, tail = proc.returncode, _last_line(stderr)
    if rc == -signal.SIGXCPU or (rc == -signal.SIGKILL and cpu >= cpu_s):
        raise BadInput(f"{who} ran past its CPU-time limit of {cpu_s} s (set {CPU_ENV} to raise it)")
    if rc == EXIT_MEMORY or (rc != 0 and "MemoryError" in tail):
        raise BadInput(f"{who} ran out of its {memory_mb} MB address-space limit (set {MEMORY_ENV} to raise it)")
    if rc < 0:
        try:
            why = signal.Signals(-rc).name
        except ValueError:
            why = f"signal {-rc}"
        raise BadInput(f"{who} failed: killed by {why}" + (f" ({tail})" if tail else ""))
    if rc != 0:
        raise BadInput(f"{who} failed: {tail or f'exit status {rc}'}")
    try:
        return json.loads(stdout)
    except ValueError:
        raise BadInput(f"{who} failed: {tail or 'it wrote no answer'}") from None


def arch_survey(install: FlashinferInstall, arch: str, *, use_cache: bool = True) -> list[tuple[str, str, str | None]]:
    """:func:`survey` of ``arch``'s builds (:func:`build_arch`: sm121 -> sm120's), cached per
    (install fingerprint and root, arch, this code): reading every ``jit/*.py`` costs a few
    tenths of a second, once.

    Raises:
        BadInput: an arch this reader has no pattern for.
    """
    same = build_arch(arch)
    kind = KINDS["flashinfer-builders"]
    found_key = kind.key(subject=[same, "survey"], target=[install.fingerprint, str(install.root)])
    found = kind.memo(found_key, lambda: survey(install, same), load=_triples, use_cache=use_cache)
    return [tuple(b) for b in found]


def arch_builders(install: FlashinferInstall, arch: str, *, use_cache: bool = True) -> list[tuple[str, str]]:
    """The builders :func:`jit_modules` runs for ``arch``'s builds: ``(module, function)`` of
    :func:`arch_survey`'s that take no required argument and whose code names both CUTLASS and a
    GEMM (case-insensitive), sorted by module. Empty where the
    install has no builder for the arch that :func:`jit_modules` runs.

    Raises:
        BadInput: an arch this reader has no pattern for.
    """
    return [(m, f) for m, f, why in arch_survey(install, arch, use_cache=use_cache) if why is None]


def jit_modules(
    install: FlashinferInstall,
    arch: str = "sm120",
    *,
    cuda_version: tuple[int, int] = (13, 0),
    use_cache: bool = True,
    run: bool = True,
) -> JitBuilds | None:
    """Run the install's module builders for ``arch`` (see the module docstring) and return
    the modules they build. Cached per (install fingerprint, arch, CUDA version, this code):
    a second call runs nothing. ``run=False`` runs nothing at all: the cached answer, or
    None where there is none.

    Raises:
        NothingForArch: the install has no builder for the arch (:func:`arch_builders`).
        BadInput: the builders could not run.
    """
    same = build_arch(arch)  # sm121: sm120's builds, folder and cache entries
    wanted = arch_builders(install, same, use_cache=use_cache)
    if not wanted:
        raise NothingForArch(
            f"flashinfer {install.version} at {install.root} has no JIT module "
            f"builder for {arch} that builds a CUTLASS GEMM"
        )
    kind = KINDS["flashinfer-jit"]
    key = kind.key(subject=[same, wanted], target=[install.fingerprint, str(install.root), list(cuda_version)])
    # the folder does not depend on this code: a rerun of the builders rewrites the same files
    # in the same place, so flags naming it (and the results keyed by them) stay the same
    out = cache_dir("flashinfer-jit", result_key(install.fingerprint, str(install.root), same, list(cuda_version))[:24])

    def load(d):  # the answer, if its generated files are still as they were written
        _builds(d, out)
        if any(_digest(Path(f)) != h for f, h in d["generated"].items()):
            raise ValueError("a generated source changed")
        return d

    def compute():
        with step(
            f"running flashinfer {install.version}'s JIT module builders for {same} "
            "(its kernel generator and templates)"
        ):
            data = run_harness(install, same, out, cuda_version, wanted)
        try:
            mods = _builds(data, out).modules
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadInput(
                f"flashinfer's JIT module builders ({install.root}) gave an answer this reader cannot use: {exc!r}"
            ) from None
        data["generated"] = {str(f): _digest(f) for m in mods for f in m.generated}
        return data

    data = kind.memo(
        key, compute, load=load, use_cache=use_cache, cached_only=not run, lock_name=f"flashinfer-jit-{out.name}"
    )
    if data is None:
        return None
    out_builds = _builds(data, out)
    out_builds.digests = {f: h for f, h in data["generated"].items() if h is not None}
    return out_builds


def _triples(d) -> list:
    if not all(
        isinstance(b, list)
        and len(b) == 3
        and all(isinstance(x, str) for x in b[:2])
        and isinstance(b[2], (str, type(None)))
        for b in d
    ):
        raise TypeError("builders")
    return d


def _digest(path: Path) -> str | None:
    """SHA-256 of a generated source (None when it cannot be read)."""
    try:
        return file_sha256(path)
    except OSError:
        return None


def _builds(data: dict, out: Path) -> JitBuilds:
    defaults = data.get("defaults", {})
    res = JitBuilds()
    for b in data["builders"]:
        name = f"{b['module']}.{b['function']}"
        res.builders.append(name)
        if b.get("error"):
            res.failed[name] = b["error"]
        for spec in b["specs"]:
            sources = [Path(s) for s in spec["sources"]]
            generated = [s for s in sources if str(s).startswith(str(out))]
            defines = [f for f in spec["extra_cuda_cflags"] if f.startswith(("-D", "-U"))]
            defines += [d for d in defaults.get("defines", []) if d not in defines]
            res.modules.append(
                JitModule(
                    name=spec["name"],
                    builder=name,
                    sources=sources,
                    generated=generated,
                    defines=defines,
                    include_dirs=[Path(p) for p in spec["extra_include_paths"]]
                    + [Path(p) for p in defaults.get("cccl_include_dirs", [])],
                    system_include_dirs=[Path(p) for p in defaults.get("system_include_dirs", [])],
                    why_none=None if generated else why_nothing_generated(sources, list(b.get("iterated") or [])),
                )
            )
    return res


def why_nothing_generated(sources: list[Path], iterated: list[str]) -> str:
    """Why a module generates no source (its builder ran without error), the first that holds:

    * its builder looped over values of flashinfer's own modules that the harness stands in
      for (``iterated``, the harness's ``ITERATED``; a data-only module such as 0.7.4's
      ``svdquant_sm120_configs`` runs for real, so its values are never among them): the
      loop that would generate its sources ran over nothing;
    * it compiles flashinfer's own sources only, which the audit does not lay out (it lays out
      the generated kernel instantiations); and which of them are not in the install
      (0.7.4's ``csrc/cute_sm12x_gemm/``: none is).
    """
    if iterated:
        mods = list(dict.fromkeys(n.rsplit(".", 1)[0] for n in iterated))
        return (
            f"its generator needs {', '.join(mods)}, which the harness does not run (it loops "
            f"over {', '.join(iterated)}, a stand-in that yields nothing): no source generated"
        )
    missing = [p for p in sources if not p.exists()]
    out = (
        f"it generates no source: its {len(sources)} source(s) are flashinfer's own ({_some(sources)}), "
        "and the audit lays out generated kernel instantiations only"
    )
    if missing:
        out += (
            "; none of them is in the install"
            if len(missing) == len(sources)
            else f"; {len(missing)} of them not in the install ({_some(missing)})"
        )
    return out


def _some(paths: list[Path]) -> str:
    """The first three of ``paths`` (:func:`_short`), and how many more."""
    more = f", {len(paths) - 3} more" if len(paths) > 3 else ""
    return ", ".join(_short(p) for p in paths[:3]) + more


def _short(path: Path) -> str:
    """A source's path from its ``csrc`` folder on (``csrc/cute_sm12x_gemm/x.cu``), else its name."""
    parts = path.parts
    return "/".join(parts[parts.index("csrc") :]) if "csrc" in parts else path.name
