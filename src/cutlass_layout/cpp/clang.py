"""libclang frontend: parse a probe translation unit and read clang's record layouts.

The flags are the ones measured in shared/FACTS.md: CUDA host-only mode, the CUDA headers'
CCCL on an ``-isystem`` path (a literal ``-isystem`` also stops libclang-ng's bindings from
adding their own libc++), ``CUTLASS_ARCH_MMA_SM{90,100,120}_SUPPORTED`` as nvcc's host pass
defines them, and an empty ``curand_mtgp32_kernel.h`` on a late include path for CUDA
header wheels that lack cuRAND.

Error recovery lies: a type whose instantiation failed comes back as ``int`` (size 4). So
a translation unit with any error yields no numbers, and every layout read must be a
complete record.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import re
from functools import lru_cache
from pathlib import Path

import clang.cindex as ci

from ..errors import BadInput
from ..model import CompileError, Constant, FieldLayout, StructLayout, short_name

STUB_DIR = Path(__file__).resolve().parent.parent / "stubs"

#: Record types shown as leaves (no members listed): storage arrays and TMA descriptors.
LEAF_PREFIXES = (
    "cute::ArrayEngine<",
    "cute::array<",
    "cute::array_subbyte<",
    "cute::array_aligned<",
    "cutlass::Array<",
    "cutlass::AlignedArray<",
    "CUtensorMap",
    "cute::TmaDescriptor",
)

_ALIGNAS_RE = re.compile(r"\b(?:alignas|CUTE_ALIGNAS|__align__|aligned)\s*\(\s*([^()]*?)\s*\)")
_ACCESS = {
    ci.AccessSpecifier.PRIVATE: "private",
    ci.AccessSpecifier.PROTECTED: "protected",
    ci.AccessSpecifier.PUBLIC: "public",
}
#: clang's spelling of an unnamed struct or union type: ``union (unnamed at /path/x.h:271:5)``
_UNNAMED_RE = re.compile(r"\((?:unnamed|anonymous)(?: (?:struct|union|class))? at [^()]*\)")


def _member_name(f: ci.Cursor) -> str:
    """A field's name; ``<anonymous>`` for an anonymous union or struct member, which libclang
    spells ``union (anonymous at FILE:LINE:COL)`` or ``S::(anonymous union at ...)``."""
    anonymous = getattr(f, "is_anonymous_record_decl", None)
    if not f.spelling or (anonymous() if anonymous else _UNNAMED_RE.search(f.spelling)):
        return "<anonymous>"
    return f.spelling


_INSTANTIATED_RE = re.compile(r"^in instantiation of template class '(.*)' requested here$", re.S)
#: a follow-up of a failed class instantiation: a member looked up in the invalid class
FOLLOW_UP_RE = re.compile(r"^no (?:type|member) named '[^']*' in '(.*)'$", re.S)
_SA_RE = re.compile(r"^static assertion failed(?: due to requirement '(.*)')?(?:: (.*))?$", re.S)

#: Errors clang gives where nvcc's front end (EDG) accepts the code, each with why. clang
#: has no flag that accepts these (``-fms-compatibility`` downgrades a missing ``typename``
#: only where clang can recover a type at parse time, not in a template argument resolved at
#: instantiation; ``-std=c++20``'s implicit ``typename`` does not cover template arguments):
#: they are reported as clang-only diagnostics, not as "does not compile".
CLANG_ONLY = (
    (
        re.compile(r"^missing 'typename' prior to dependent type name "),
        "nvcc's front end accepts a dependent type name without 'typename' as a template "
        "argument (CUTLASS's SM120 sparse collectives write "
        "make_fragment_like<ThrMma::Atom::Traits::ValTypeE>(...)); clang requires the keyword",
    ),
)


def clang_only(err: CompileError) -> str | None:
    """Why ``err`` is a clang-only diagnostic (:data:`CLANG_ONLY`), or ``None`` when it is not one."""
    for pattern, why in CLANG_ONLY:
        if pattern.search(err.message):
            return why
    return None


@lru_cache(maxsize=1)
def libclang_version() -> str:
    """``clang version X`` as the loaded libclang reports it (plus the wheel's version)."""
    try:
        f = ci.conf.lib.clang_getClangVersion
        f.restype = ci._CXString
        text = str(ci._CXString.from_result(f()))
    except Exception:  # pragma: no cover - bindings without the call
        text = "clang (unknown version)"
    try:
        text += f" (libclang-ng {md.version('libclang-ng')})"
    except md.PackageNotFoundError:  # pragma: no cover
        pass
    return text


def resource_include() -> Path:
    """libclang's own headers, the folder clang searches after the command line's (the
    libclang-ng wheel's ``clang/native/resource/include``: its builtin headers and CUDA
    wrappers)."""
    return Path(ci.__file__).parent / "native" / "resource" / "include"


def clang_flags(
    include_root: Path, cuda_path: Path, cccl: Path | None, gpu_arch: str, cuda_version: tuple[int, int] = (13, 0)
) -> list[str]:
    """The command line for a CUDA host-only parse of a probe against one CUTLASS tree.

    ``cuda_version`` becomes ``__CUDACC_VER_MAJOR__``/``__CUDACC_VER_MINOR__``, which nvcc
    defines and clang does not.
    """
    flags = [
        "-x",
        "cuda",
        "--cuda-host-only",
        "-nocudalib",
        f"--cuda-path={cuda_path}",
        f"--cuda-gpu-arch={gpu_arch}",
        "-Wno-unknown-cuda-version",
        "-std=c++17",
    ]
    if cccl is not None:
        flags += ["-isystem", str(cccl)]
    else:  # older toolkits keep CCCL in include/; the literal -isystem keeps libc++ out
        flags += ["-isystem", str(Path(cuda_path) / "include")]
    flags += [
        f"-I{include_root}",
        "-idirafter",
        str(STUB_DIR),
        "-DCUTLASS_ARCH_MMA_SM90_SUPPORTED",
        "-DCUTLASS_ARCH_MMA_SM100_SUPPORTED",
        "-DCUTLASS_ARCH_MMA_SM120_SUPPORTED",
        "-DCUTLASS_ARCH_MMA_SM120A_ENABLED",
        f"-D__CUDACC_VER_MAJOR__={cuda_version[0]}",
        f"-D__CUDACC_VER_MINOR__={cuda_version[1]}",
        "-D__CUDACC_VER_BUILD__=0",
        # -w: CUTLASS warns a lot. -ferror-limit: past clang's default 20 errors it stops
        # reporting, and a config in a batch whose error went unreported costs another
        # parse; a bound still stops a runaway cascade of errors
        "-w",
        "-ferror-limit=1000",
    ]
    return flags


#: The host ABIs a kernel's ``Params`` is laid out for (:func:`msvc_flags`): GCC/Clang on Linux
#: x86-64, the parse's own, and MSVC on Windows x64, cl.exe's.
ABI_LINUX = "linux-x86_64"
ABI_MSVC = "msvc-x64"
MSVC_TARGET = "x86_64-pc-windows-msvc"
#: The stand-ins of the MSVC parse (package data): glibc's fixed-width integer headers at LLP64
#: widths, ``cuda.h`` as cl.exe's ``__cplusplus`` reads it, the C runtime's names glibc lacks.
MSVC_STUB_DIR = STUB_DIR / "msvc"
#: Defined in the MSVC parse for ``-Xcompiler /Zc:__cplusplus`` (``stubs/msvc/cuda.h``).
ZC_CPLUSPLUS_MACRO = "CUTLASS_LAYOUT_ZC_CPLUSPLUS"


def gnu_system_includes(root: Path = Path("/usr/include")) -> list[Path]:
    """The C and C++ system headers a Linux parse finds by itself and a parse for the MSVC
    target does not (its search path is Windows'): libstdc++'s (the highest GCC version with
    its target folder) and glibc's, in the order the GNU driver searches them. Empty where
    there are none."""
    versions = sorted(
        (p for p in (root / "c++").glob("*") if (root / "x86_64-linux-gnu" / "c++" / p.name).is_dir()),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in p.name.split(".")],
    )
    if not versions or not (root / "stdlib.h").is_file():
        return []
    cxx = versions[-1]
    return [
        cxx,
        root / "x86_64-linux-gnu" / "c++" / cxx.name,
        cxx / "backward",
        root / "x86_64-linux-gnu",
        root,
    ]


def msvc_flags(flags: list[str], *, zc_cplusplus: bool = False) -> list[str]:
    """``flags`` (:func:`clang_flags` and what a caller added) for the same parse on the
    MSVC x64 host ABI: clang's ``x86_64-pc-windows-msvc`` target (the Microsoft record
    layout, LLP64: ``long`` 4 bytes; ``_MSC_VER``, ``_WIN32``, ``_WIN64``, ``_MSVC_LANG``
    defined), cl.exe's ``__cplusplus`` of 199711L where it changes a layout (``cuda.h``'s
    ``CUtensorMap``; ``zc_cplusplus``: ``/Zc:__cplusplus``, the standard's value), the
    stand-ins of :data:`MSVC_STUB_DIR` between libstdc++ and glibc on the system path
    (:func:`gnu_system_includes`: they stand in for the MSVC STL and UCRT, which are not here). A
    precompiled header of the Linux parse is dropped (each ABI has its own).

    Raises:
        BadInput: no libstdc++/glibc headers to stand in for Windows' own.
    """
    system = gnu_system_includes()
    if not system:
        raise BadInput("no libstdc++ and glibc headers under /usr/include: the MSVC ABI parse needs them")
    out: list[str] = []
    skip = False
    for f in flags:
        if skip:
            skip = False
            continue
        if f == "-include-pch":
            skip = True
            continue
        out.append(f)
    first = out.index("-isystem") if "-isystem" in out else len(out)
    # libstdc++ first, then the stand-ins, then glibc: libstdc++'s <cmath> and <cstdint> reach
    # the C headers with #include_next, which searches only the folders after its own
    stand_ins: list[str] = []
    for p in [*system[:3], MSVC_STUB_DIR, *system[3:]]:
        stand_ins += ["-isystem", str(p)]
    out[first:first] = stand_ins
    # what the GNU driver defines on Linux and libstdc++ and glibc expect: _GNU_SOURCE for C++,
    # GCC's atomic flag value (1 on x86-64)
    extra = [
        f"--target={MSVC_TARGET}",
        "-D_GNU_SOURCE",
        "-D__GCC_ATOMIC_TEST_AND_SET_TRUEVAL=1",
        "-include",
        str(MSVC_STUB_DIR / "cl_msvc_prelude.h"),
    ]
    if zc_cplusplus:
        extra.append(f"-D{ZC_CPLUSPLUS_MACRO}")
    return extra + out


def abi_of(flags: list[str]) -> str:
    """:data:`ABI_MSVC` for flags of :func:`msvc_flags`, else :data:`ABI_LINUX`."""
    return ABI_MSVC if f"--target={MSVC_TARGET}" in flags else ABI_LINUX


def ensure_pch(preambles: str | list[str], flags: list[str], key: str, *, building=None) -> Path | None:
    """A precompiled header for ``flags``, cached: of the first of ``preambles`` (C++ texts:
    the CUTLASS includes, optionally followed by declarations whose instantiations every
    later parse can reuse) that parses without errors.

    The cache file is ``<cache>/pch/<sha256(key, flags, preamble, libclang)>.pch``; callers
    put the tree's content hash in ``key``. It is built under a lock (processes that need the
    same header at once build it once), renamed into place when whole and sealed with its
    SHA-256 (:func:`~cutlass_layout.core.cache.seal`): one that does not match its seal is built
    again. A preamble that does not parse cleanly leaves a ``.bad`` marker there, so it is
    tried once per tree. Building one takes about as long as one plain parse and saves most
    of every later parse. Returns ``None`` when no preamble parses cleanly (the probe parse
    without a precompiled header then reports the real error) or the header cannot be
    written. ``building``, a context manager factory taking a description
    (:func:`cutlass_layout.core.progress.step`), is entered around a build (not around a cached
    header), to say on stderr that one is being built.
    """
    from contextlib import nullcontext

    from ..core.cache import cache_dir, lock, sealed

    folder = cache_dir("pch")
    for preamble in [preambles] if isinstance(preambles, str) else preambles:
        digest = hashlib.sha256("\0".join([key, libclang_version(), preamble, *flags]).encode()).hexdigest()[:24]
        path = folder / f"{digest}.pch"
        bad = folder / f"{digest}.bad"
        if sealed(path, digest):
            return path
        if bad.is_file():
            continue
        with lock(f"pch-{digest}"):
            if sealed(path, digest):  # built by another process meanwhile
                return path
            if bad.is_file():
                continue
            abi = " for the MSVC x64 host ABI" if abi_of(flags) == ABI_MSVC else ""
            with (building or (lambda what: nullcontext()))(
                f"building a precompiled header of the CUTLASS includes{abi} (once per tree and flags)"
            ):
                built = build_pch(preamble, flags, folder / f"{digest}.cuh", path, digest)
        if built:
            _prune(folder, keep=PCH_KEEP)
            return path
        if built is False:  # errors in the preamble itself: do not try it again
            try:
                bad.touch()
            except OSError:
                pass
    return None


def build_pch(preamble: str, flags: list[str], header: Path, path: Path, key: str) -> bool | None:
    """Build ``path`` from ``preamble`` and seal it for ``key``: ``True`` when built, ``False``
    when the preamble has errors, ``None`` when libclang could not parse or save at all, or
    the cache cannot be written (try again later)."""
    from ..core.cache import discard, seal, write_atomic

    index = ci.Index.create()
    try:
        tu = index.parse(
            str(header),
            args=flags,
            unsaved_files=[(str(header), preamble)],
            options=ci.TranslationUnit.PARSE_INCOMPLETE | ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES,
        )
    except ci.TranslationUnitLoadError:
        return None
    if any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
        return False
    try:
        write_atomic(path, tu.save)
        seal(path, key)
    except (ci.TranslationUnitSaveError, OSError):
        discard(path)
        return None
    return True


#: Precompiled headers kept in the cache (tens of MB each: docs/performance.md); the least
#: recently built go.
PCH_KEEP = 16


def _prune(folder: Path, keep: int) -> None:
    from ..core.cache import discard

    stamped = []
    for p in folder.glob("*.pch"):
        try:
            stamped.append((p.stat().st_mtime, p))
        except OSError:  # removed by another process meanwhile
            pass
    for _, old in sorted(stamped, reverse=True)[keep:]:
        discard(old)


class ProbeUnit:
    """One parsed probe translation unit.

    Args:
        text: the probe's C++ source.
        flags: from :func:`clang_flags`.
        include_root: the CUTLASS include root (file names are reported relative to it).
        filename: the virtual file name of the probe.
        skip_bodies: skip function bodies (types only); ``False`` to instantiate kernels.

    Raises:
        BadInput: libclang could not parse at all (e.g. an unreadable flag or path).
    """

    def __init__(
        self,
        text: str,
        flags: list[str],
        include_root: Path,
        filename: str = "cutlass_layout_probe.cu",
        skip_bodies: bool = True,
    ):
        self.include_root = Path(include_root)
        self.filename = filename
        self.flags = list(flags)
        index = ci.Index.create()
        try:
            self.tu = index.parse(
                filename,
                args=flags,
                unsaved_files=[(filename, text)],
                options=ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES if skip_bodies else 0,
            )
        except ci.TranslationUnitLoadError as exc:
            raise BadInput(f"libclang could not parse the probe: {exc}") from None
        self._lines: dict[str, list[str]] = {}
        self._errors: list | None = None
        self._root = self.include_root.resolve()
        self._rel: dict[str, str] = {}
        self._namespaces: dict[str, list[ci.Cursor]] = {}
        for c in self.tu.cursor.get_children():
            if c.kind == ci.CursorKind.NAMESPACE:
                self._namespaces.setdefault(c.spelling, []).append(c)

    # -- diagnostics ----------------------------------------------------------------------
    def pch_rejected(self) -> bool:
        """Whether clang refused the precompiled header (a file changed since it was built)."""
        return any(
            d.severity >= ci.Diagnostic.Error
            and ("precompiled header" in d.spelling or "PCH file" in d.spelling or "modified since" in d.spelling)
            for d in self.tu.diagnostics
        )

    def errors(self) -> list[CompileError]:
        """Every error or fatal diagnostic, in order, as :class:`CompileError`."""
        return [e for e, _ in self.errors_with_probe_lines()]

    def failed_classes(self) -> dict[str, CompileError]:
        """Class templates whose instantiation failed on a static_assert, by the name clang
        prints (``in instantiation of template class 'NAME' requested here``), each with
        that static_assert. A later use of such a class in the same translation unit gets
        only follow-up errors (``no type named 'X' in 'NAME'``): clang instantiates a class
        once and reports its failure once."""
        out: dict[str, CompileError] = {}
        for d, err, _ in self._error_diagnostics():
            if err.kind != "static_assert":
                continue
            for note in d.children:
                m = _INSTANTIATED_RE.match(note.spelling)
                if m:
                    out.setdefault(m.group(1), err)
        return out

    def errors_with_probe_lines(self) -> list[tuple[CompileError, int | None]]:
        """Each error with the probe line that led to it (``None`` when clang gives none).

        The probe line is the error's own location when it lies in the probe, else the
        outermost "in instantiation of ..." note that lies in the probe (the config block
        that asked for the type; an inner one can be a shared helper such as the
        ``cl_detail`` detectors, which belongs to no config). clang leaves the
        instantiation context off errors that follow in the same instantiation, so callers
        attribute such errors to the previous one's line.
        """
        return [(err, line) for _, err, line in self._error_diagnostics()]

    def _error_diagnostics(self) -> list[tuple[ci.Diagnostic, CompileError, int | None]]:
        """(diagnostic, error, probe line) of every error, computed once per unit."""
        if self._errors is not None:
            return self._errors
        out = []
        for d in self.tu.diagnostics:
            if d.severity < ci.Diagnostic.Error:
                continue
            line = None
            if d.location.file and d.location.file.name == self.filename:
                line = d.location.line
            else:
                for note in d.children:  # innermost first: keep the last (outermost) one
                    loc = note.location
                    if (
                        loc.file
                        and loc.file.name == self.filename
                        and not note.spelling.startswith("in file included from")
                    ):
                        line = loc.line
            out.append((d, self._error(d), line))
        self._errors = out
        return out

    def _error(self, d) -> CompileError:
        msg = d.spelling
        kind = "error"
        m = _SA_RE.match(msg)
        if m:
            kind = "static_assert"
            if m.group(2):
                msg = m.group(2).strip().strip('"')
            elif m.group(1):
                msg = f"requirement {m.group(1)} is false"
        loc = d.location
        file = self.rel(loc.file.name) if loc.file else None
        return CompileError(kind=kind, message=msg, file=file, line=loc.line if loc.file else None)

    # -- names and text -------------------------------------------------------------------
    def rel(self, path: str) -> str:
        """``path`` relative to the CUTLASS include root when inside it, else as given."""
        if path not in self._rel:
            p = Path(path)
            try:
                self._rel[path] = p.resolve().relative_to(self._root).as_posix()
            except ValueError:
                self._rel[path] = p.name if p.name == self.filename else str(p)
        return self._rel[path]

    def _text(self, extent) -> str:
        start, end = extent.start, extent.end
        if start.file is None:
            return ""
        name = start.file.name
        if name not in self._lines:
            try:
                self._lines[name] = Path(name).read_text(errors="replace").splitlines(keepends=True)
            except OSError:
                self._lines[name] = []
        lines = self._lines[name]
        if not lines or start.line > len(lines):
            return ""
        if start.line == end.line:
            return lines[start.line - 1][start.column - 1 : end.column - 1]
        chunk = [lines[start.line - 1][start.column - 1 :]]
        chunk += lines[start.line : end.line - 1]
        chunk.append(lines[end.line - 1][: end.column - 1] if end.line <= len(lines) else "")
        return "".join(chunk)

    def include_dirs(self) -> list[Path]:
        """The ``-I``/``-isystem`` directories of the unit's flags, in order (the CUDA
        headers' CCCL, the CUTLASS include root, a user type's own)."""
        out: list[Path] = []
        it = iter(self.flags)
        for f in it:
            if f == "-isystem" or f == "-I":
                out.append(Path(next(it, "")))
            elif f.startswith("-I") or (f.startswith("-isystem") and len(f) > 8):
                out.append(Path(f[2:] if f.startswith("-I") else f[8:]))
        return out

    def cuda_version(self) -> tuple[int, int]:
        """The CUDA version the unit is parsed as (``-D__CUDACC_VER_MAJOR__``/``MINOR__`` of
        :func:`clang_flags`); (12, 0) where the flags do not say."""

        def ver(name: str, default: int) -> int:
            v = next((f.split("=", 1)[1] for f in self.flags if f.startswith(f"-D{name}=")), None)
            return int(v) if v is not None and v.isdigit() else default

        return ver("__CUDACC_VER_MAJOR__", 12), ver("__CUDACC_VER_MINOR__", 0)

    def abi(self) -> str:
        """The host ABI the unit is parsed for (:func:`abi_of` its flags)."""
        return abi_of(self.flags)

    def gpu_arch(self) -> str | None:
        """The ``--cuda-gpu-arch`` the unit is parsed for (``sm_120a``), or None."""
        return next((f.split("=", 1)[1] for f in self.flags if f.startswith("--cuda-gpu-arch=")), None)

    # -- reading a config's namespace --------------------------------------------------------
    def aliases(self, namespace: str) -> dict[str, ci.Cursor]:
        """The declarations of ``namespace`` (all its blocks) by name (aliases and variables)."""
        return {c.spelling: c for ns in self._namespaces.get(namespace, []) for c in ns.get_children()}

    @staticmethod
    def int_alias(cursor: ci.Cursor) -> int:
        """The N of a ``using X = char[N]`` alias; raises ValueError if it is not one."""
        t = cursor.underlying_typedef_type.get_canonical()
        if t.kind != ci.TypeKind.CONSTANTARRAY:
            raise ValueError(f"{cursor.spelling} is not a char array (got {t.spelling})")
        return t.get_size()

    @staticmethod
    def type_name(cursor: ci.Cursor) -> str | None:
        """The canonical spelling of the type a ``using`` alias names (``cutlass::half_t``,
        ``float``), or ``None`` for the probe's placeholder ``cl_detail::cl_none``.

        Raises:
            ValueError: the alias names an invalid type (a class's name is never taken from
                a broken unit).
        """
        t = cursor.underlying_typedef_type.get_canonical()
        if t.spelling == "cl_detail::cl_none":
            return None
        if t.kind == ci.TypeKind.INVALID:
            raise ValueError(f"{cursor.spelling} names no valid type")
        return t.spelling

    @staticmethod
    def template_name(cursor: ci.Cursor) -> str | None:
        """The name of the class (template) a ``using`` alias names, without its template
        arguments (``CollectiveMma``, ``MainloopSm90TmaGmmaWarpSpecialized``): what tells a
        collective's family apart, read without spelling the whole type; ``None`` for the
        probe's placeholder ``cl_detail::cl_none`` or an invalid type."""
        t = cursor.underlying_typedef_type.get_canonical()
        if t.kind == ci.TypeKind.INVALID:
            return None
        name = t.get_declaration().spelling
        return None if not name or name == "cl_none" else name

    def template_site(self, alias: ci.Cursor | None, line_re: re.Pattern) -> tuple[str | None, int | None]:
        """Where the class that the ``using`` alias ``alias`` names is written: its class
        template's file (relative to the include root, :meth:`rel`) and the first line of its
        body matching ``line_re`` (the line of the class where none does); ``(None, None)``
        for no alias or a class in no file."""
        if alias is None:
            return None, None
        decl = alias.underlying_typedef_type.get_canonical().get_declaration()
        pattern = ci.conf.lib.clang_getSpecializedCursorTemplate(decl)
        owner = pattern if pattern is not None and not pattern.kind.is_invalid() else decl
        loc = owner.location
        if loc.file is None:
            return None, None
        try:
            lines = Path(loc.file.name).read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        start, end = owner.extent.start.line, owner.extent.end.line
        hit = next((n for n in range(start, min(end, len(lines)) + 1) if line_re.search(lines[n - 1])), None)
        return self.rel(loc.file.name), hit or loc.line

    def constant(self, name: str, value: int, ref: ci.Cursor | None) -> Constant:
        """A :class:`Constant` for ``value``, with the header's expression and file:line taken
        from the declaration that the reference variable ``ref`` binds to."""
        decl = None
        if ref is not None:
            for c in ref.walk_preorder():
                if c.kind == ci.CursorKind.DECL_REF_EXPR and c.referenced is not None:
                    decl = c.referenced
                    break
        return self._constant_at(name, value, decl)

    def static_member(self, alias: ci.Cursor, name: str, value: int) -> Constant:
        """A :class:`Constant` for the static member ``name`` of the class ``alias`` names,
        with expression and file:line from the class template's definition (an implicit
        instantiation has no children of its own in libclang)."""
        decl = alias.underlying_typedef_type.get_canonical().get_declaration()
        pattern = ci.conf.lib.clang_getSpecializedCursorTemplate(decl)
        found = None
        for owner in (pattern, decl):
            if owner is None or owner.kind.is_invalid():
                continue
            owner._tu = decl._tu  # cursors made by a raw call lack the TU back-reference
            found = next(
                (c for c in owner.get_children() if c.kind == ci.CursorKind.VAR_DECL and c.spelling == name), None
            )
            if found is not None:
                break
        return self._constant_at(name, value, found)

    def _constant_at(self, name: str, value: int, decl: ci.Cursor | None) -> Constant:
        if decl is None:
            return Constant(name=name, value=value)
        text = self._text(decl.extent)
        expr = text.split("=", 1)[1].strip() if "=" in text else None
        if expr:
            expr = re.sub(r"\s+", " ", expr).rstrip(";").strip()
        loc = decl.location
        return Constant(
            name=decl.spelling or name,
            value=value,
            expression=expr,
            file=self.rel(loc.file.name) if loc.file else None,
            line=loc.line,
        )

    def record(self, cursor: ci.Cursor, optional: bool = False) -> StructLayout | None:
        """The layout of the record an alias names, members recursively.

        With ``optional``, the probe's placeholder ``cl_detail::cl_none`` (the subject has no
        such part) gives ``None``.

        Raises:
            ValueError: the alias is not a complete record (error recovery's ``int``, or an
                incomplete type): never report such a number.
        """
        t = cursor.underlying_typedef_type.get_canonical()
        if optional and t.spelling == "cl_detail::cl_none":
            return None
        if t.kind != ci.TypeKind.RECORD:
            raise ValueError(f"{cursor.spelling} is not a record (got {t.spelling})")
        size, align = t.get_size(), t.get_align()
        if size <= 0 or align <= 0:
            raise ValueError(f"{cursor.spelling} is incomplete (size {size})")
        union = t.get_declaration().kind == ci.CursorKind.UNION_DECL
        fields = self._members(t, 0, union)
        end = max((f.offset + f.size for f in fields), default=0)
        return StructLayout(
            type=short_name(t.spelling), size=size, align=align, tail_padding=size - end, fields=fields, union=union
        )

    def _members(self, t, base: int, union: bool, depth: int = 0) -> list[FieldLayout]:
        decl = t.get_declaration()
        members: list[FieldLayout] = []
        for b in t.get_bases():
            bt = b.type.get_canonical()
            if not list(bt.get_fields()) and not list(bt.get_bases()):
                continue  # empty base (aligned_struct<...>): takes no room
            off = base + b.get_base_offsetof(decl) // 8
            members.append(self._field(f"<base {short_name(bt.spelling)}>", b.type, bt, off, None, b, depth))
        for f in t.get_fields():
            ft = f.type.get_canonical()
            off = base + f.get_field_offsetof() // 8
            members.append(self._field(_member_name(f), f.type, ft, off, self._alignas(f), f, depth))
        cursor = base
        for m in members:
            m.padding_before = 0 if union else m.offset - cursor
            if not union:
                cursor = m.offset + m.size
        return members

    def _field(self, name, written, canon, offset, alignas, cursor, depth) -> FieldLayout:
        size = max(canon.get_size(), 0)
        align = max(canon.get_align(), 0)
        loc = cursor.location
        f = FieldLayout(
            name=name,
            type=_UNNAMED_RE.sub("(unnamed)", written.spelling),
            offset=offset,
            size=size,
            type_align=align,
            declared_alignas=alignas,
            file=self.rel(loc.file.name) if loc.file else None,
            line=loc.line if loc.file else None,
            access=_ACCESS.get(cursor.access_specifier, "public"),
        )
        if canon.kind == ci.TypeKind.RECORD and depth < 12 and not canon.spelling.startswith(LEAF_PREFIXES):
            sub_union = canon.get_declaration().kind == ci.CursorKind.UNION_DECL
            f.fields = self._members(canon, offset, sub_union, depth + 1)
            if f.fields and not sub_union:
                f.tail_padding = offset + size - max(m.offset + m.size for m in f.fields)
        return f

    def _alignas(self, field: ci.Cursor) -> int | None:
        if not any(c.kind == ci.CursorKind.ALIGNED_ATTR for c in field.get_children()):
            return None
        m = _ALIGNAS_RE.search(self._text(field.extent))
        if m and m.group(1).isdigit():
            return int(m.group(1))
        return None


__all__ = [
    "ABI_LINUX",
    "ABI_MSVC",
    "ProbeUnit",
    "abi_of",
    "clang_flags",
    "msvc_flags",
    "libclang_version",
    "resource_include",
    "short_name",
]


def spelling_location(cursor) -> tuple[str | None, int | None]:
    """``(file, line)`` where ``cursor`` is written: for a declaration expanded from a macro,
    inside the macro's definition (``cursor.location`` gives the expansion)."""
    file, line, col, off = ci.c_object_p(), ci.c_uint(), ci.c_uint(), ci.c_uint()
    f = ci.conf.lib.clang_getSpellingLocation
    f.argtypes = [
        ci.SourceLocation,
        ci.POINTER(ci.c_object_p),
        ci.POINTER(ci.c_uint),
        ci.POINTER(ci.c_uint),
        ci.POINTER(ci.c_uint),
    ]
    f(cursor.location, ci.byref(file), ci.byref(line), ci.byref(col), ci.byref(off))
    if not file:
        return None, None
    return ci.File(file).name, line.value
