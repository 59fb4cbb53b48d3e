"""Find a CUTLASS include tree: a directory, a checkout, a wheel, an installed distribution.

A *CUTLASS tree* is a directory ``R`` with ``R/cutlass/version.h`` or ``R/cutlass/cutlass.h``:
the ``include/`` directory of a CUTLASS checkout (``R/cute`` too from 3.0). Checkouts of tags
v2.0.0 to v3.4.0 have no ``include/cutlass/version.h`` (CMake writes it into the build folder
from ``cmake/version.h.in``); their version is read from the checkout's other markers
(:func:`tree_version`). Installs keep the tree in different places
(``flashinfer/data/cutlass/include``, ``cutlass_library/source/include``,
``deep_gemm/include``, ``vllm/third_party/*/include``); :func:`resolve_cutlass` finds it by
looking for ``**/cutlass/{version,cutlass}.h`` (in a wheel, below an ``include/``) and never
walks into a tree it found.

Wheels are read with :mod:`zipfile` without installing them; only the members below the
chosen include root are unpacked, once, into the user cache, keyed by the wheel's SHA-256:
under a lock (processes using a new wheel at once unpack it once), into a temporary folder
renamed into place when complete, within :data:`~cutlass_layout.core.files.LIMITS`. A damaged
wheel (bad CRC, a member that is both a file and a folder) is bad input. The marker of an
unpacked tree holds a digest of every file's path and size, and a tree that no longer matches
it is unpacked again.

Where a source holds several trees (vLLM keeps two), the error lists them; pick one with
``SOURCE#SUBPATH`` (e.g. ``vllm#vllm/third_party/deep_gemm/include``) or pass the path.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as md
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from ..core.cache import KINDS, cache_dir, fallback_dirs, file_sha256, lock
from ..core.progress import step
from ..core.files import LIMITS, check_limit, file_kind, kind_of, read_text, walk

#: The CUTLASS fetched when no source is given and none is installed (6 MB wheel).
DEFAULT_WHEEL = "nvidia-cutlass==4.2.0.0"

#: Import names and short names of distributions that carry CUTLASS.
DIST_ALIASES = {
    "flashinfer": "flashinfer-python",
    "flashinfer_python": "flashinfer-python",
    "cutlass_library": "nvidia-cutlass",
    "cutlass": "nvidia-cutlass",
    "nvidia_cutlass": "nvidia-cutlass",
    "sgl_kernel": "sgl-kernel",
    "sglang": "sgl-kernel",
}

#: Distributions looked at, in this order, when no ``--cutlass`` is given.
ENV_DISTS = ("nvidia-cutlass", "flashinfer-python", "sgl-kernel", "vllm")

_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".tox", ".venv", "tests", "test"}
_MAX_DEPTH = 10
_VERSION_H = "cutlass/version.h"
_CUTLASS_H = "cutlass/cutlass.h"
#: What makes a directory a CUTLASS include root (either file).
_TREE_FILES = (_VERSION_H, _CUTLASS_H)
#: Where a checkout without ``include/cutlass/version.h`` says its version, relative to the
#: checkout (the include root's parent), read in this order: ``CMakeLists.txt``'s
#: ``project(CUTLASS VERSION 2.10.0 LANGUAGES CXX)`` (tags v2.0.0 to v3.4.0; what CMake
#: writes into the version.h it generates from ``cmake/version.h.in``; from v3.4.1 it reads
#: ``${_CUTLASS_VERSION_MAJOR}...`` from version.h), ``CHANGELOG.md``'s first ``## [...]``
#: heading (``## [2.10.0](https://github.com/NVIDIA/cutlass/releases/tag/v2.10.0) (2022-08-23)``;
#: ``## [3.3]`` at v3.3.0/v3.4.0), ``python/setup.py``'s ``version='3.1.0'`` (tags v3.1.0 to
#: v3.2.2). Like version.h they can lag a tag: CMakeLists.txt says 2.6.0 at v2.6.1, 2.7.0 at
#: v2.8.0, 2.9.0 at v2.9.1.
_VERSION_MARKERS = (
    ("CMakeLists.txt", re.compile(r"^[ \t]*project[ \t]*\([ \t]*CUTLASS[ \t]+VERSION[ \t]+([^\s)]+)",
                                  re.M | re.I)),
    ("CHANGELOG.md", re.compile(r"^##[ \t]*\[([^\]\n]*)\]", re.M)),
    ("python/setup.py", re.compile(r"^[ \t]*version[ \t]*=[ \t]*['\"]([^'\"\n]*)['\"]", re.M)),
)
#: A version a marker may name (the first match of its pattern, else the marker is passed over).
_SEMVER = re.compile(r"\d+\.\d+\.\d+")
_MARKER = ".cutlass-layout-complete"  # written beside an unpacked tree, not part of it
_INSTALL_MARKER = ".cutlass-layout-install-complete"
#: beside an unpacked install: what its metadata requires of apache-tvm-ffi (:func:`tvm_ffi_headers`)
_REQUIREMENT_FILE = ".cutlass-layout-tvm-ffi-requirement"
_MARKERS = (_MARKER, _INSTALL_MARKER, _REQUIREMENT_FILE)


@dataclass(frozen=True)
class CutlassTree:
    """A CUTLASS include tree ready to be parsed.

    Attributes:
        include_root: directory holding ``cutlass/`` (and ``cute/`` from CUTLASS 3.0).
        version: ``MAJOR.MINOR.PATCH`` read from ``cutlass/version.h`` (not always right:
            tag v4.1.0 says 4.0.0; compare ``tree_hash`` to tell trees apart), else from the
            checkout's markers (:func:`tree_version`), else ``unknown``.
        origin: what the user named (path, wheel, distribution) and how it was found.
        version_from: where ``version`` was read: ``cutlass/version.h``, a marker such as
            ``CMakeLists.txt project()`` (a path relative to the checkout), or ``none``.
    """

    include_root: Path
    version: str
    origin: str
    version_from: str = _VERSION_H

    @property
    def tree_hash(self) -> str:
        """See :func:`tree_hash`."""
        return tree_hash(self.include_root)


#: File name endings of C++ headers (the files ``scan`` and ``diff`` read).
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inl", ".hxx")


def tree_files(top, *, hidden: bool = True, special: list | None = None) -> list[str]:
    """Every regular file below ``top`` (or link to one), as paths relative to it
    (``/``-separated), sorted. Links to directories are not followed; with ``hidden=False``
    directories whose name starts with ``.`` (``.git``) are not entered. FIFOs, sockets,
    devices and broken links are left out (never opened), and appended to ``special`` as
    ``(relative path, what it is)`` when a list is given. The walk behind :func:`file_digests`
    (tree hashes, ``diff``'s changed headers) and :func:`header_files` (``scan``)."""
    def unreadable(rel, exc):
        if special is not None and rel:
            special.append((rel, f"an unreadable folder ({exc.strerror or exc})"))

    out = []
    for rel, e in walk(top, enter=lambda rel, e: hidden or not e.name.startswith("."), unreadable=unreadable):
        try:
            regular = e.is_file()  # follows a link
        except OSError:
            regular = False
        if regular:
            out.append(rel)
        elif special is not None and not (e.is_symlink() and os.path.isdir(e.path)):
            special.append((rel, file_kind(e.path) or "not a regular file"))
    out.sort()
    return out


def is_header(rel: str) -> bool:
    """Whether a relative path from :func:`tree_files` is a header (:data:`HEADER_SUFFIXES`)
    outside hidden directories."""
    return rel.endswith(HEADER_SUFFIXES) and not any(p.startswith(".") for p in rel.split("/")[:-1])


def header_files(top, *, special: list | None = None) -> list[str]:
    """The headers below ``top`` (see :func:`is_header`), as :func:`tree_files` gives them;
    header-named entries that are not regular files go to ``special`` (as there)."""
    found: list = []
    out = [r for r in tree_files(top, hidden=False, special=found) if is_header(r)]
    if special is not None:
        special += [(r, k) for r, k in found if is_header(r) or "folder" in k]
    return out


#: Per process: a root's tree hash (keyed by the root as given, and resolved), and its
#: file digests (keyed by ``(resolved root, "files")``).
_TREE_HASHES: dict = {}


def file_digests(root) -> dict[str, bytes]:
    """SHA-256 of every file below ``root`` (but the cache's own markers beside an unpacked
    tree), by path relative to it, in :func:`tree_files` order. Read once per process.

    Raises:
        BadInput: a file cannot be read, or the tree holds a FIFO, socket or device (which a
            parse could block on): the message names it.
    """
    root = Path(root).resolve()
    if (root, "files") not in _TREE_HASHES:
        out = {}
        special: list = []
        rels = tree_files(root, special=special)
        special = [(rel, kind) for rel, kind in special if kind != "a broken link"]
        if special:
            rel, kind = special[0]
            more = f" (and {len(special) - 1} more)" if len(special) > 1 else ""
            if "folder" in kind:
                raise BadInput(f"{root / rel} is {kind}{more}: every file of a CUTLASS tree "
                               "must be readable")
            raise BadInput(f"{root / rel} is {kind}, not a regular file{more}: a CUTLASS tree "
                           "must hold regular files only (a parse could block on it); remove it")
        top = str(root)
        for rel in rels:
            if rel.rsplit("/", 1)[-1] in _MARKERS:
                continue
            try:
                with open(os.path.join(top, rel), "rb") as fh:
                    out[rel] = hashlib.file_digest(fh, "sha256").digest()
            except OSError as exc:
                raise BadInput(f"cannot read {root / rel}: {exc.strerror or exc} "
                               "(every file of a CUTLASS tree must be readable)") from None
        _TREE_HASHES[root, "files"] = out
    return _TREE_HASHES[root, "files"]


def tree_hash(root: Path) -> str:
    """Content hash of a tree: SHA-256 over every file's relative path and the SHA-256 of its
    bytes (:func:`file_digests`), in path order. Returns the first 16 hex digits. Memoised
    per process."""
    if root not in _TREE_HASHES:  # keyed as given too: resolving a path costs system calls
        h = hashlib.sha256()
        for rel, digest in file_digests(root).items():
            h.update(rel.encode() + b"\0")
            h.update(digest)
        _TREE_HASHES[root] = h.hexdigest()[:16]
    return _TREE_HASHES[root]


def read_version(include_root: Path) -> str:
    """Return ``MAJOR.MINOR.PATCH`` from ``cutlass/version.h``.

    Raises:
        BadInput: the file is missing or has no ``CUTLASS_MAJOR`` define.
    """
    path = Path(include_root) / _VERSION_H
    text = read_text(path, what="version header", errors="replace")
    parts = []
    for key in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"#\s*define\s+CUTLASS_{key}\s+(\d+)", text)
        if not m:
            raise BadInput(f"{path} has no CUTLASS_{key}: not a CUTLASS version header")
        parts.append(m.group(1))
    return ".".join(parts)


#: How :func:`tree_version` names each marker it read.
_MARKER_NAMES = {"CMakeLists.txt": "CMakeLists.txt project()", "CHANGELOG.md": "CHANGELOG.md heading",
                 "python/setup.py": "python/setup.py version"}


def tree_version(include_root: Path) -> tuple[str, str]:
    """``(version, where)`` of a CUTLASS include tree.

    With ``cutlass/version.h``: :func:`read_version` and ``"cutlass/version.h"``. Without it
    (checkouts of tags v2.0.0 to v3.4.0): the first of :data:`_VERSION_MARKERS` in the
    include root's parent whose first match names a ``MAJOR.MINOR.PATCH`` version
    (``"2.10.0", "CMakeLists.txt project()"``); a marker that is missing, unreadable, not a
    regular file, over the file limit, or whose first match is no such version (v3.4.1's
    ``project(CUTLASS VERSION ${_CUTLASS_VERSION_MAJOR}...``, a ``## [Unreleased]`` heading)
    is passed over. None: ``("unknown", "none")``.

    Raises:
        BadInput: ``cutlass/version.h`` exists but has no ``CUTLASS_MAJOR`` (and so on) define.
    """
    root = Path(include_root)
    if (root / _VERSION_H).exists():
        return read_version(root), _VERSION_H
    for rel, pattern in _VERSION_MARKERS:
        path = root.parent / rel
        if not path.is_file():
            continue
        try:
            text = read_text(path, what="version marker", errors="replace")
        except BadInput:  # OverLimit too
            continue
        m = pattern.search(text)
        if m and _SEMVER.fullmatch(m.group(1)):
            return m.group(1), _MARKER_NAMES[rel]
    return "unknown", "none"


def _is_tree(path: Path) -> bool:
    return any((path / f).is_file() for f in _TREE_FILES)


def find_trees(top: Path) -> list[Path]:
    """Every CUTLASS include root below ``top`` (sorted), without walking into one found.

    A root is a directory (``top`` itself, or one below it) holding ``cutlass/version.h``
    or ``cutlass/cutlass.h``. Hidden, cache and test directories are skipped; depth is
    bounded to 10 levels.
    """
    top = Path(top)
    if _is_tree(top):
        return [top]
    found: list[Path] = []
    base_depth = len(top.parts)
    for dirpath, dirnames, _ in os.walk(top):
        here = Path(dirpath)
        if len(here.parts) - base_depth >= _MAX_DEPTH:
            dirnames[:] = []
            continue
        keep = []
        for d in sorted(dirnames):
            if d in _SKIP_DIRS or d.startswith("."):
                continue
            sub = here / d
            if _is_tree(sub):
                found.append(sub)
            else:
                keep.append(d)
        dirnames[:] = keep
    return sorted(found)


#: Trees named in the error when a source holds several (the rest are counted).
_SHOWN_TREES = 6


def _pick(candidates: list, what: str, how: str, shown=str):
    if not candidates:
        raise BadInput(f"no CUTLASS headers (cutlass/cutlass.h or cutlass/version.h) in {what}")
    if len(candidates) > 1:
        listed = ", ".join(shown(c) for c in candidates[:_SHOWN_TREES])
        if len(candidates) > _SHOWN_TREES:
            listed += f" and {len(candidates) - _SHOWN_TREES} more"
        raise BadInput(f"{what} holds {len(candidates)} CUTLASS trees: {listed}; {how}")
    return candidates[0]


def _tree(root: Path, origin: str) -> CutlassTree:
    root = Path(root).resolve()
    version, where = tree_version(root)
    return CutlassTree(include_root=root, version=version, origin=origin, version_from=where)


def _from_dir(path: Path, sub: str | None, origin: str) -> CutlassTree:
    if sub:
        chosen = path / sub
        if not _is_tree(chosen):
            raise BadInput(f"{chosen} is not a CUTLASS include tree (no cutlass/cutlass.h "
                           "or cutlass/version.h)")
        return _tree(chosen, origin)
    trees = find_trees(path)
    root = _pick(
        trees,
        str(path),
        f"pick one as {path}#SUBPATH, or give its path",
        shown=lambda t: os.path.relpath(t, path),
    )
    return _tree(root, origin)


def _wheel_roots(zf: zipfile.ZipFile) -> list[str]:
    roots = set()
    for name in zf.namelist():
        for f in _TREE_FILES:
            if name.endswith("/" + f) or name == f:
                prefix = name[: -len(f)]
                if prefix == "" or prefix.endswith("include/"):
                    roots.add(prefix)
    return sorted(roots)


def _sha256_file(path: Path) -> str:
    """SHA-256 of a wheel, remembered in the cache per (path, size, mtime): a 60 MB wheel
    is hashed once, not on every run that names it."""
    st = path.stat()
    key = KINDS["wheel-digests"].identity_key(str(path.resolve()), st.st_size, st.st_mtime_ns)

    def load(d):
        if not (isinstance(d, str) and len(d) == 64 and all(c in "0123456789abcdef" for c in d)):
            raise ValueError(d)
        return d

    def compute():
        try:
            return file_sha256(path)
        except OSError as exc:
            raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None

    return KINDS["wheel-digests"].memo(key, compute, load=load)


#: What reading a damaged zip raises (a bad CRC, a truncated or garbled stream).
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError)


def _open_wheel(path: Path) -> zipfile.ZipFile:
    kind = file_kind(path)
    if kind is not None:
        raise BadInput(f"{path} is {kind}, not a wheel file")
    try:
        return zipfile.ZipFile(path)
    except (*_ZIP_ERRORS, OSError) as exc:
        raise BadInput(f"{path} is not a readable wheel: {exc}") from None


def _damaged(path: Path, why) -> BadInput:
    return BadInput(f"{path} is a damaged wheel ({why}): fetch or build it again")


def _cached_wheel_roots(path: Path, digest: str) -> list[str]:
    """:func:`_wheel_roots` of a wheel, remembered in the cache per wheel digest (so a big
    wheel's directory is not read on every run: docs/performance.md)."""
    def load(d):
        if not (isinstance(d, list) and all(isinstance(r, str) for r in d)):
            raise TypeError(d)
        return d

    def compute():
        with _open_wheel(path) as zf:
            return _wheel_roots(zf)

    return KINDS["wheel-roots"].memo(KINDS["wheel-roots"].identity_key(digest), compute, load=load)


def _manifest(root: Path, skip: str | None = None) -> str:
    """A digest of every file's path and size below ``root`` (leaving out the folder ``skip``,
    relative, and the markers), in path order: what an unpacked tree's marker records."""
    sizes = []
    for rel, e in walk(root, enter=lambda rel, e: not (skip and (rel + "/").startswith(skip))):
        if e.name in _MARKERS:
            continue
        try:
            sizes.append(f"{rel}\0{e.stat().st_size}\n")
        except OSError:
            sizes.append(f"{rel}\0-1\n")
    return hashlib.sha256("".join(sorted(sizes)).encode()).hexdigest()[:32]


def _complete(root: Path, marker: str, skip: str | None = None) -> bool:
    """Whether the tree unpacked at ``root`` is whole: its marker names the manifest the
    tree still has (a file removed or cut short since is a miss: unpack it again)."""
    try:
        lines = (root / marker).read_text().split("\n")
    except (OSError, UnicodeDecodeError):
        return False
    if len(lines) == 2 and lines[1] == "":  # a marker of version 0.1.0, written when complete
        return True
    return len(lines) >= 2 and lines[1] == _manifest(root, skip)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _unpack(path: Path, zf: zipfile.ZipFile, members: list[tuple[zipfile.ZipInfo, str]], tmp: Path,
            what: str) -> None:
    """Write ``members`` (each a zip member and its path relative to ``tmp``) below ``tmp``,
    within :data:`LIMITS`; once the limits are checked, :func:`~cutlass_layout.core.progress.step`
    says ``unpacking WHAT from WHEEL into the cache``.

    Raises:
        BadInput: a damaged member, or two members that make a path both a file and a folder.
        OverLimit: more bytes than the limits allow (checked before writing anything).
    """
    total = sum(m.file_size for m, _ in members)
    check_limit(total, LIMITS.archive_bytes, f"what {path} unpacks")
    big = max(members, key=lambda mr: mr[0].file_size, default=None)
    if big is not None:
        check_limit(big[0].file_size, LIMITS.file_bytes, f"{big[0].filename} in {path}")
    with step(f"unpacking {what} from {path.name} into the cache"):
        _write_members(path, zf, members, tmp)
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private: others sharing the cache read it


def _write_members(path: Path, zf: zipfile.ZipFile, members: list[tuple[zipfile.ZipInfo, str]],
                   tmp: Path) -> None:
    for m, rel in members:
        out = tmp / rel
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(m) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
            # the member's own time: a tree unpacked again keeps the precompiled headers built
            # from it (clang refuses one whose files are newer than it)
            with contextlib.suppress(ValueError, OverflowError, OSError):
                t = time.mktime((*m.date_time, 0, 0, -1))
                os.utime(out, (t, t))
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            raise _damaged(path, f"{m.filename} is both a file and a folder in it") from None
        except _ZIP_ERRORS as exc:
            raise _damaged(path, exc) from None


def _members(zf: zipfile.ZipFile, prefix: str, keep=None) -> list[tuple[zipfile.ZipInfo, str]]:
    """Files of ``zf`` below ``prefix`` (``keep(name)`` chooses), each with its path below it;
    names that climb out (``..``, absolute) are left out."""
    out = []
    for m in zf.infolist():
        if not m.filename.startswith(prefix) or m.is_dir() or (keep and not keep(m.filename)):
            continue
        rel = m.filename[len(prefix):]
        if rel and ".." not in Path(rel).parts and not rel.startswith("/"):
            out.append((m, rel))
    return out


def _from_wheel(path: Path, sub: str | None, origin: str) -> CutlassTree:
    full = _sha256_file(path)
    roots = _cached_wheel_roots(path, full)
    if sub:
        prefix = sub.strip("/") + "/"
        if prefix not in roots:
            raise BadInput(f"{path} has no CUTLASS tree at {sub}")
    else:
        prefix = _pick(
            roots,
            str(path),
            f"pick one as {path}#SUBPATH",
            shown=lambda p: p.rstrip("/"),
        )
    dest = cache_dir("trees", full[:16]) / prefix
    if not _complete(dest, _MARKER):
        with lock(f"tree-{full[:16]}-{hashlib.sha256(prefix.encode()).hexdigest()[:8]}"):
            if not _complete(dest, _MARKER):  # another process may have unpacked it meanwhile
                _unpack_tree(path, prefix, dest)
    return _tree(dest, origin)


def _unpack_tree(path: Path, prefix: str, dest: Path) -> None:
    """Unpack the members of wheel ``path`` below ``prefix`` as the tree ``dest`` (under the
    caller's lock): into a temporary folder, marked, then renamed into place; an incomplete
    tree there before is moved aside first."""
    trees = cache_dir("trees")
    tmp = Path(tempfile.mkdtemp(dir=trees, prefix=".unpack-"))
    try:
        with _open_wheel(path) as zf:
            _unpack(path, zf, _members(zf, prefix), tmp, prefix.rstrip("/") or "the tree")
        (tmp / _MARKER).write_text(f"{path.name}\n{_manifest(tmp)}\n")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            old = Path(tempfile.mkdtemp(dir=trees, prefix=".old-"))
            os.replace(dest, old / "tree")
            shutil.rmtree(old, ignore_errors=True)
        os.replace(tmp, dest)
        here = (dest, dest.resolve())
        for k in [k for k in _TREE_HASHES if (k[0] if isinstance(k, tuple) else k) in here]:
            del _TREE_HASHES[k]  # the tree there now is another one
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _usable_wheel(folder: Path) -> Path | None:
    """The wheel in a cache folder of fetched wheels, if one is there and opens as a zip."""
    for whl in sorted(folder.glob("*.whl")):
        if whl.is_file() and zipfile.is_zipfile(whl):
            return whl
    return None


def fetch_wheel(spec: str) -> Path:
    """Download ``name==version`` (a wheel, never an sdist) into the cache; return its path.

    Uses ``pip download --no-deps --only-binary=:all:`` into a temporary folder, then moves
    the wheel into place (under a lock: processes fetching the same wheel at once download it
    once). A second call finds the cached file and does not touch the network; a cached file
    that is not a zip is fetched again.

    Raises:
        BadInput: the package index has no wheel for ``spec`` (e.g. flashinfer's 0.2.x-0.4.x
            source-only releases), or pip failed.
    """
    return _fetch(spec)[0]


def _wheel_origin(spec: str) -> tuple[Path, str]:
    """:func:`fetch_wheel` of ``spec`` and the origin a report names it by: ``SPEC (wheel
    NAME, cached)``, or ``downloaded into the cache`` on the run that fetched it."""
    whl, fetched = _fetch(spec)
    return whl, f"{spec} (wheel {whl.name}, {'downloaded into the cache' if fetched else 'cached'})"


def _fetch(spec: str) -> tuple[Path, bool]:
    """:func:`fetch_wheel`, and whether this call downloaded the wheel."""
    safe = re.sub(r"[^A-Za-z0-9._=-]", "_", spec)
    dest = cache_dir("wheels", safe)
    for folder in [dest, *fallback_dirs("wheels", safe)]:
        whl = _usable_wheel(folder)
        if whl is not None:
            return whl, False
    with lock(f"wheel-{hashlib.sha256(safe.encode()).hexdigest()[:16]}"):
        whl = _usable_wheel(dest)
        if whl is not None:
            return whl, False
        tmp = Path(tempfile.mkdtemp(dir=cache_dir("wheels"), prefix=".fetch-"))
        try:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "-q", "-d", str(tmp), spec]
            with step(f"downloading {spec} (pip download)"):
                proc = subprocess.run(cmd, capture_output=True, text=True)
            got = _usable_wheel(tmp)
            if proc.returncode != 0 or got is None:
                lines = [ln for ln in (proc.stderr or "").splitlines() if ln.startswith("ERROR")]
                why = short_pip_error(lines[0].removeprefix("ERROR: ")) if lines else "pip download failed"
                raise BadInput(f"no wheel for {spec} on the package index ({why})")
            for stale in dest.glob("*.whl"):  # a damaged one
                with contextlib.suppress(OSError):
                    stale.unlink()
            os.replace(got, dest / got.name)
            return dest / got.name, True
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def short_pip_error(line: str, keep: int = 5) -> str:
    """pip's first ``ERROR:`` line, its ``(from versions: ...)`` list cut to the oldest and the
    ``keep`` newest where it is longer (flashinfer-python's runs to some 1.5 kB, in one
    ``error:`` line); on this machine's index: ``(from versions: 0.5.0rc1, ..., 0.7.2rc5,
    0.7.2rc6, 0.7.2, 0.7.2.post1, 0.7.4; 72 in all)``. pip lists
    them oldest first (``pip/_internal/resolution``: "Could not find a version that satisfies
    the requirement ... (from versions: ...)")."""
    def cut(m: re.Match) -> str:
        versions = [v.strip() for v in m.group(1).split(",") if v.strip()]
        if len(versions) <= keep + 2:
            return m.group(0)
        return f"(from versions: {versions[0]}, ..., {', '.join(versions[-keep:])}; {len(versions)} in all)"
    return re.sub(r"\(from versions: ([^)]*)\)", cut, line)


def _dist_dirs(dist: md.Distribution) -> list[Path]:
    """Top-level directories a distribution installed (from its RECORD)."""
    tops: set[str] = set()
    for f in dist.files or []:
        parts = Path(str(f)).parts
        if len(parts) > 1 and not parts[0].endswith((".dist-info", ".data")) and parts[0] != "..":
            tops.add(parts[0])
    base = Path(str(dist.locate_file("")))
    return [base / t for t in sorted(tops) if (base / t).is_dir()]


def _from_dist(name: str, sub: str | None, origin: str) -> CutlassTree:
    dist_name = DIST_ALIASES.get(name.lower(), name)
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        raise BadInput(
            f"{name!r} is neither an existing path nor an installed distribution"
        ) from None
    base = Path(str(dist.locate_file("")))
    if sub:
        return _from_dir(base, sub, origin)
    trees: list[Path] = []
    for d in _dist_dirs(dist):
        trees.extend(find_trees(d))
    root = _pick(
        trees,
        f"distribution {dist_name} {dist.version}",
        f"pick one as {name}#SUBPATH",
        shown=lambda t: os.path.relpath(t, base),
    )
    return _tree(root, origin)


def _from_environment() -> CutlassTree | None:
    for dist_name in ENV_DISTS:
        try:
            dist = md.distribution(dist_name)
        except md.PackageNotFoundError:
            continue
        for d in _dist_dirs(dist):
            trees = find_trees(d)
            if trees:
                return _tree(trees[0], f"installed {dist_name} {dist.version}")
    return None


def resolve_cutlass(src: str | os.PathLike | CutlassTree | None = None) -> CutlassTree:
    """Resolve what the user named to a :class:`CutlassTree`.

    ``src`` may be:

    * ``None``: the CUTLASS of an installed nvidia-cutlass, flashinfer-python, sgl-kernel or
      vllm (first found), else :data:`DEFAULT_WHEEL` fetched into the cache (its origin says
      whether this call downloaded it or found it cached);
    * an include dir (``.../include`` with ``cutlass/cutlass.h`` or ``cutlass/version.h``),
      a CUTLASS checkout (2.x ones without ``version.h`` too: :func:`tree_version`), a
      site-packages dir or any directory holding exactly one tree;
    * a ``.whl`` file, read without installing it;
    * an installed distribution by distribution or import name (``flashinfer``,
      ``flashinfer-python``, ``nvidia-cutlass``, ``cutlass_library``, ``sgl_kernel``, ``vllm``);
    * ``name==version``: that wheel, fetched from the package index into the cache;
    * any of these followed by ``#SUBPATH`` to choose one tree where there are several.

    Raises:
        BadInput: missing path, no CUTLASS found, several found and none chosen, no wheel.
    """
    if isinstance(src, CutlassTree):
        return src
    if src is None:
        found = _from_environment()
        if found is not None:
            return found
        whl, origin = _wheel_origin(DEFAULT_WHEEL)  # "downloaded into the cache" once, then "cached"
        return _from_wheel(whl, None, f"default {origin}")
    text = os.fspath(src)
    sub = None
    if "#" in text:
        text, sub = text.split("#", 1)
    path = Path(text).expanduser()
    if path.exists():
        if path.is_file():
            if path.suffix == ".whl":
                return _from_wheel(path, sub, f"wheel {path}")
            raise BadInput(f"{path} is a file, not a directory or a .whl wheel")
        if not path.is_dir():
            raise BadInput(f"{path} is {file_kind(path)}, not a directory or a .whl wheel")
        return _from_dir(path, sub, f"directory {path}")
    if "==" in text:
        whl, origin = _wheel_origin(text)
        return _from_wheel(whl, sub, origin)
    if os.sep in text or text.endswith(".whl") or text.startswith("."):
        raise BadInput(f"path does not exist: {text}")
    return _from_dist(text, sub, f"installed {text}")


# ============================================================================================
# flashinfer installs (what `audit` reads)

#: Parts of a flashinfer wheel that ``audit`` unpacks (paths under ``flashinfer/``): the JIT's
#: Python (module builders, the TensorRT-LLM kernel generator, templates' renderers), the
#: top-level modules it reads constants from, the headers its builds include, and the
#: sources and jinja templates directly under ``data/csrc`` (not its many kernel folders), and
#: what ``audit --blocklist`` reads of the tactics blocklist's loader (the autotuner package, the
#: CUTLASS MoE runner in ``fused_moe/core.py``).
INSTALL_DIRS = ("jit/", "data/include/", "data/spdlog/", "data/cccl/", "data/csrc/nv_internal/",
                "data/cutlass/tools/", "autotuner/", "fused_moe/core.py")
_FLASHINFER_DISTS = ("flashinfer-python", "flashinfer")


@dataclass(frozen=True)
class FlashinferInstall:
    """An installed (or unpacked) flashinfer package.

    Attributes:
        root: the ``flashinfer`` package directory (holds ``jit/`` and ``data/``).
        version: flashinfer's version (``_build_meta.py`` or ``version.py``, else the
            dist-info), or ``unknown``.
        origin: what the user named and how it was found.
        tree: the CUTLASS tree it ships (``data/cutlass/include``).
        fingerprint: identifies the install's content: ``wheel:`` and the first 16 hex digits
            of the wheel's SHA-256 for a wheel, else a hash of every file's path, size and mtime
            under ``root`` (a changed header changes it; for a checkout, under each of its
            folders that :data:`CHECKOUT_DIRS` names).
        tvm_ffi_requirement: what the install's metadata requires of ``apache-tvm-ffi``
            (``apache-tvm-ffi<0.2,>=0.1.11``), the distribution whose headers
            (``tvm/ffi/...``, ``dlpack/``) its TVM FFI bindings include; None when the
            metadata is not there or names none (see :func:`tvm_ffi_headers`).
        checkout: for a flashinfer-ai/flashinfer git checkout, its root (``root`` is then a
            folder of the cache that links the checkout's parts into an install's layout); else None.
    """

    root: Path
    version: str
    origin: str
    tree: CutlassTree
    fingerprint: str
    tvm_ffi_requirement: str | None = None
    checkout: Path | None = None


def _wanted_install_member(name: str) -> bool:
    if not name.startswith("flashinfer/") or name.endswith("/"):
        return False
    rel = name[len("flashinfer/"):]
    if "/" not in rel:
        return rel.endswith(".py")
    if rel.startswith("data/csrc/") and "/" not in rel[len("data/csrc/"):]:
        return True
    return rel.startswith(INSTALL_DIRS)


def _flashinfer_version(root: Path) -> str:
    for name in ("_build_meta.py", "version.py"):
        try:
            m = re.search(r"__version__\s*(?::\s*str\s*)?=\s*[\"']([^\"']+)[\"']",
                          read_text(root / name, errors="replace"))
        except BadInput:
            continue
        if m:
            return m.group(1)
    for info in sorted(root.parent.glob("flashinfer*.dist-info")):
        try:
            m = re.search(r"^Version:\s*(\S+)", read_text(info / "METADATA", errors="replace"), re.M)
        except BadInput:
            continue
        if m:
            return m.group(1)
    return "unknown"


def _stat_fingerprint(root: Path) -> str:
    """A hash of every file's path, size and mtime under ``root``.

    Raises:
        BadInput: a FIFO, socket or device there (the install's code, read and run, could
            block on it).
    """
    rows = []
    for rel, e in walk(root, enter=lambda rel, e: e.name != "__pycache__"):
        try:
            st = os.stat(e.path)
        except OSError:
            continue
        kind = kind_of(st.st_mode)
        if kind is not None:
            raise BadInput(f"{e.path} is {kind}, not a regular file: a flashinfer install must hold "
                           "regular files only (its code is read and run); remove it")
        if stat.S_ISDIR(st.st_mode):  # a link to a folder: named, not entered
            continue
        rows.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n")
    h = hashlib.sha256()
    for row in sorted(rows):
        h.update(row.encode())
    return h.hexdigest()[:16]


#: Where the parts of an installed ``flashinfer`` package (paths below it) sit in a
#: flashinfer-ai/flashinfer git checkout (paths below its root): ``build_backend.py``'s
#: ``_create_data_dir`` links (editable) or copies (wheel) ``3rdparty/cutlass``,
#: ``3rdparty/spdlog``, ``3rdparty/cccl``, ``csrc`` and ``include`` to ``flashinfer/data/``;
#: everything else below the package is ``flashinfer/`` itself.
CHECKOUT_DIRS = {"data/cutlass": "3rdparty/cutlass", "data/spdlog": "3rdparty/spdlog",
                 "data/cccl": "3rdparty/cccl", "data/csrc": "csrc", "data/include": "include"}


def checkout_path(rel: str) -> str:
    """The path in a flashinfer git checkout (relative to its root) of ``rel``, a path relative
    to an installed ``flashinfer`` package (``data/csrc/nv_internal/x.inl`` ->
    ``csrc/nv_internal/x.inl``, ``jit/core.py`` -> ``flashinfer/jit/core.py``), by
    :data:`CHECKOUT_DIRS`. A wheel and the checkout it was built from name the same file so."""
    rel = Path(rel).as_posix()
    for part, there in CHECKOUT_DIRS.items():
        if rel == part or rel.startswith(part + "/"):
            return there + rel[len(part):]
    return f"flashinfer/{rel}"


def _checkout_root(path: Path) -> Path | None:
    """``path`` (or the checkout above it, when ``path`` is its ``flashinfer`` package) when
    it is a flashinfer-ai/flashinfer git checkout as cloned: ``flashinfer/jit/``, ``csrc/``
    and ``include/`` at its root and no ``flashinfer/data`` (an editable install's links,
    read as an install). Else None."""
    for cand in (path, path.parent) if path.name == "flashinfer" else (path,):
        if ((cand / "flashinfer" / "jit").is_dir() and (cand / "csrc").is_dir()
                and (cand / "include").is_dir() and not (cand / "flashinfer" / "data").exists()):
            return cand
    return None


#: The marker of a checkout's install-shaped folder of links in the cache (holds the checkout's path).
_CHECKOUT_MARKER = ".checkout"


def _checkout_links(checkout: Path) -> dict[str, str]:
    """What the install-shaped folder of a checkout holds: ``{path below flashinfer/: the
    checkout's file or folder it links to}``, every entry of the checkout's ``flashinfer/``
    package and the ``data/`` parts of :data:`CHECKOUT_DIRS` the checkout has."""
    links = {p.name: str(p) for p in sorted((checkout / "flashinfer").iterdir())
             if p.name != "__pycache__"}
    links.update({part: str(checkout / there) for part, there in CHECKOUT_DIRS.items()
                  if (checkout / there).exists()})
    return links


def _links_of(root: Path) -> dict[str, str] | None:
    """The links an install-shaped folder holds (as :func:`_checkout_links` gives them), or
    None when it is missing or holds something else."""
    try:
        out = {}
        for p in sorted(root.iterdir()):
            if p.name == "data":
                out.update({f"data/{q.name}": os.readlink(q) for q in sorted(p.iterdir())})
            else:
                out[p.name] = os.readlink(p)
        return out
    except OSError:
        return None


def _checkout_install(checkout: Path, origin: str) -> FlashinferInstall:
    """A flashinfer git checkout as an install: its parts linked into an install's layout
    (``flashinfer/`` with ``data/cutlass`` -> ``3rdparty/cutlass`` and so on,
    :data:`CHECKOUT_DIRS`) in a folder of the cache kept per checkout path and remade when the
    checkout's entries change; nothing is written into the checkout. The version is
    ``flashinfer/_build_meta.py``'s when a build wrote one, else ``version.txt``'s (what
    ``build_backend.py`` would write), else ``unknown``.

    Raises:
        BadInput: the CUTLASS submodule is not checked out (``3rdparty/cutlass/include``), or
            a FIFO, socket or device in the checkout's parts.
    """
    checkout = checkout.resolve()
    inc = checkout / "3rdparty" / "cutlass" / "include"
    if not _is_tree(inc):
        raise BadInput(f"the flashinfer checkout at {checkout} has no CUTLASS tree (3rdparty/cutlass/include): "
                       "its submodules are not checked out (git submodule update --init --recursive)")
    fingerprint = hashlib.sha256("\n".join(
        f"{there}:{_stat_fingerprint(checkout / there)}" for there in
        ("flashinfer", *CHECKOUT_DIRS.values()) if (checkout / there).is_dir()).encode()).hexdigest()[:16]
    base = cache_dir("checkouts", hashlib.sha256(str(checkout).encode()).hexdigest()[:16])
    root = base / "flashinfer"
    links = _checkout_links(checkout)
    if _links_of(root) != links:
        with lock(f"checkout-{base.name}"):
            if _links_of(root) != links:
                tmp = Path(tempfile.mkdtemp(dir=base, prefix=".links-"))
                (tmp / "data").mkdir()
                for name, target in links.items():
                    os.symlink(target, tmp / name)
                old = base / f".old-{tmp.name}"
                if root.exists():
                    os.replace(root, old)
                os.replace(tmp, root)
                shutil.rmtree(old, ignore_errors=True)
                (base / _CHECKOUT_MARKER).write_text(f"{checkout}\n")
    version = "unknown"
    if (checkout / "flashinfer" / "_build_meta.py").is_file():
        version = _flashinfer_version(root)
    elif (checkout / "version.txt").is_file():
        version = read_text(checkout / "version.txt", errors="replace").strip() or "unknown"
    requirement = None
    with contextlib.suppress(BadInput):  # what build_backend.py's dependencies read
        line = re.search(r"^[ \t]*apache[-_.]tvm[-_.]ffi[ \t]*([^#;\n]*)", read_text(
            checkout / "requirements.txt", errors="replace"), re.M | re.I)
        requirement = TVM_FFI_DIST + re.sub(r"\s+", "", line.group(1)) if line else None
    return FlashinferInstall(root=root, version=version, origin=origin, tree=_tree(inc, origin),
                             fingerprint=f"checkout:{fingerprint}", checkout=checkout,
                             tvm_ffi_requirement=requirement)


def _flashinfer_root(path: Path) -> Path | None:
    for cand in (path, path / "flashinfer"):
        if (cand / "jit").is_dir() and (cand / "data").is_dir():
            return cand
    return None


def _install(root: Path, origin: str, fingerprint: str | None = None,
             requirement: str | None = None) -> FlashinferInstall:
    inc = root / "data" / "cutlass" / "include"
    if not _is_tree(inc):
        raise BadInput(f"the flashinfer package at {root} has no CUTLASS tree (data/cutlass/include)")
    if requirement is None:
        requirement = _installed_requirement(root)
    return FlashinferInstall(root=root.resolve(), version=_flashinfer_version(root), origin=origin,
                             tree=_tree(inc, origin), fingerprint=fingerprint or _stat_fingerprint(root),
                             tvm_ffi_requirement=requirement)


def _wheel_install_facts(path: Path, digest: str) -> dict:
    """What :func:`_install_from_wheel` reads of the wheel's directory, remembered per wheel
    digest and the code of this module, which says what is wanted (a flashinfer wheel's
    directory of some 15,000 members is not read again on every run: docs/performance.md):
    ``jit`` (it holds ``flashinfer/jit/``), ``requirement`` (its METADATA's TVM FFI
    requirement) and ``wanted`` (a digest of the members an audit unpacks)."""
    def load(d):
        if not (isinstance(d, dict) and isinstance(d["jit"], bool) and isinstance(d["wanted"], str)
                and isinstance(d["requirement"], (str, type(None)))):
            raise TypeError(d)
        return d

    def compute():
        with _open_wheel(path) as zf:  # opened once: its names and its METADATA's requirement
            names = zf.namelist()
            requirement = _wheel_requirement(path, zf, names)
        return {"jit": any(n.startswith("flashinfer/jit/") for n in names), "requirement": requirement,
                "wanted": _wanted_digest(names)}

    kind = KINDS["wheel-installs"]
    return kind.memo(kind.key(subject=[digest], target=[]), compute, load=load)


def _wanted_digest(names: list[str]) -> str:
    """A digest of the wheel members (of ``names``) an audit unpacks (:func:`_wanted_install_member`)."""
    return hashlib.sha256("\n".join(sorted(n for n in names if _wanted_install_member(n))).encode()).hexdigest()[:16]


def _install_from_wheel(path: Path, origin: str) -> FlashinferInstall:
    full = _sha256_file(path)
    digest = full[:16]
    facts = _wheel_install_facts(path, full)
    if not facts["jit"]:
        raise BadInput(f"{path} holds no flashinfer package (flashinfer/jit/)")
    requirement = facts["requirement"]
    base = cache_dir("trees", digest)

    def whole() -> bool:
        # the marker's manifest is the tree's, and it was written for the members unpacked
        # now (an install unpacked before INSTALL_DIRS grew may lack some)
        if not _complete(base, _INSTALL_MARKER, _INCLUDE_SUBTREE):
            return False
        try:
            return (base / _INSTALL_MARKER).read_text().split("\n")[2] == facts["wanted"]
        except (OSError, UnicodeDecodeError, IndexError):
            return False
    if not whole():
        with lock(f"install-{digest}"):
            if not whole():
                _unpack_install(path, base)
    # the CUTLASS include tree is unpacked (and marked complete) as for `--cutlass WHEEL`
    _from_wheel(path, "flashinfer/data/cutlass/include", origin)
    _write_requirement(base, requirement)
    return _install(base / "flashinfer", origin, fingerprint=f"wheel:{digest}", requirement=requirement)


#: Where a flashinfer wheel's CUTLASS tree sits below its unpacked install (unpacked apart).
_INCLUDE_SUBTREE = "flashinfer/data/cutlass/include/"


def _unpack_install(path: Path, base: Path) -> None:
    """Unpack the parts of a flashinfer wheel that ``audit`` reads below ``base`` (under the
    caller's lock): into a temporary folder, then file by file into place (the CUTLASS tree
    below it is unpacked apart), and the marker last."""
    tmp = Path(tempfile.mkdtemp(dir=cache_dir("trees"), prefix=".unpack-"))
    try:
        with _open_wheel(path) as zf:
            _unpack(path, zf, _members(zf, "", _wanted_install_member), tmp,
                    "the parts audit reads (the JIT's code, the headers)")
            wanted = _wanted_digest(zf.namelist())
        (base / _INSTALL_MARKER).unlink(missing_ok=True)
        for rel in tree_files(tmp):
            dest = base / rel
            if dest.is_dir():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / rel, dest)
        (base / _INSTALL_MARKER).write_text(f"{path.name}\n{_manifest(base, _INCLUDE_SUBTREE)}\n{wanted}\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def resolve_flashinfer(src: str | os.PathLike | None = None) -> FlashinferInstall:
    """Resolve what the user named to a :class:`FlashinferInstall`.

    ``src`` may be ``None`` (the flashinfer installed in this environment), a ``flashinfer``
    package directory or a directory holding one (site-packages, a venv's site-packages), a
    flashinfer-ai/flashinfer git checkout's root with its submodules (its parts linked into an
    install's layout in the cache, :func:`_checkout_install`), a ``.whl`` file (the parts
    ``audit`` reads, :data:`INSTALL_DIRS`, are unpacked into the user cache, keyed by the
    wheel's SHA-256), ``flashinfer-python==VERSION`` (that wheel, fetched into the cache), or
    an installed distribution name (``flashinfer``, ``flashinfer-python``).

    Raises:
        BadInput: no flashinfer there, no CUTLASS tree in it (a checkout without its
            submodules), a damaged wheel, no such wheel.
    """
    if src is None:
        for name in _FLASHINFER_DISTS:
            try:
                dist = md.distribution(name)
            except md.PackageNotFoundError:
                continue
            root = _flashinfer_root(Path(str(dist.locate_file(""))))
            if root is not None:
                return _install(root, f"installed {name} {dist.version}")
        raise BadInput("no flashinfer is installed in this environment: name one "
                       "(a site-packages dir, a .whl, or flashinfer-python==VERSION)")
    text = os.fspath(src)
    path = Path(text).expanduser()
    if path.exists():
        if path.is_file():
            if path.suffix != ".whl":
                raise BadInput(f"{path} is a file, not a directory or a .whl wheel")
            return _install_from_wheel(path, f"wheel {path}")
        if not path.is_dir():
            raise BadInput(f"{path} is {file_kind(path)}, not a directory or a .whl wheel")
        root = _flashinfer_root(path)
        if root is None:
            checkout = _checkout_root(path)
            if checkout is not None:
                return _checkout_install(checkout, f"checkout {path}")
            raise BadInput(f"no flashinfer package (flashinfer/jit and flashinfer/data) in {path}, "
                           "nor a flashinfer git checkout (flashinfer/jit, csrc and include)")
        return _install(root, f"directory {path}")
    if "==" in text:
        return _install_from_wheel(*_wheel_origin(text))
    if os.sep in text or text.endswith(".whl") or text.startswith("."):
        raise BadInput(f"path does not exist: {text}")
    name = DIST_ALIASES.get(text.lower(), text)
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        raise BadInput(f"{text!r} is neither an existing path nor an installed distribution") from None
    root = _flashinfer_root(Path(str(dist.locate_file(""))))
    if root is None:
        raise BadInput(f"distribution {name} {dist.version} holds no flashinfer package")
    return _install(root, f"installed {name} {dist.version}")


def flashinfer_of(tree: CutlassTree) -> FlashinferInstall | None:
    """The flashinfer install whose CUTLASS tree ``tree`` is (its ``data/cutlass/include``),
    as :func:`resolve_flashinfer` would resolve it, without fetching or unpacking anything:
    None when the tree is not a flashinfer's, or is a wheel's whose other parts (what
    ``audit`` reads) have not been unpacked into the cache.

    Raises:
        BadInput: as :func:`resolve_flashinfer` for an install directory (a FIFO in it).
    """
    inc = Path(tree.include_root)
    if inc.parts[-3:] != ("data", "cutlass", "include"):
        return None
    root = inc.parent.parent.parent
    if _flashinfer_root(root) != root:
        return None
    base = root.parent
    if (base / _INSTALL_MARKER).exists():
        # a wheel unpacked into the cache: trees/<the wheel's SHA-256, 16>/flashinfer
        if not _complete(base, _INSTALL_MARKER, _INCLUDE_SUBTREE):
            return None
        return _install(root, tree.origin, fingerprint=f"wheel:{base.name}",
                        requirement=_read_requirement(base))
    if Path(cache_dir("trees")).resolve() in root.resolve().parents:
        return None  # the CUTLASS tree of a wheel, and only that, is unpacked
    return _install(root, tree.origin)


# -- the TVM FFI headers flashinfer's bindings include -------------------------------------

#: The distribution that ships ``tvm/ffi/*.h`` and ``dlpack/dlpack.h`` (``tvm_ffi/include``),
#: which flashinfer's build puts on every module's ``-isystem`` path
#: (``get_system_includes`` in ``flashinfer/jit/cpp_ext.py``: ``tvm_ffi.libinfo.find_include_path()``).
TVM_FFI_DIST = "apache-tvm-ffi"
_TVM_FFI_INCLUDE = "tvm_ffi/include/"
#: ``Requires-Dist: apache-tvm-ffi<0.2,>=0.1.11`` (or ``apache-tvm-ffi (<0.2,>=0.1.11)``),
#: without an environment marker (an ``extra ==`` one is an optional requirement).
_TVM_FFI_REQ = re.compile(r"^Requires-Dist:[ \t]*apache[-_.]tvm[-_.]ffi[ \t]*\(?([^;()\n]*)\)?[ \t]*(;[^\n]*)?$",
                          re.M | re.I)


@dataclass(frozen=True)
class TvmFfiHeaders:
    """Where a flashinfer install's TVM FFI headers come from (:func:`tvm_ffi_headers`).

    Attributes:
        include: the folder holding ``tvm/ffi/`` and ``dlpack/`` (``tvm_ffi/include``), or None
            when there is none to use.
        origin: where it was found, or (``include`` None) why there is none, in words.
        fingerprint: identifies those headers (the wheel's SHA-256, or a hash of the folder's
            paths, sizes and mtimes); empty when ``include`` is None.
    """

    include: Path | None
    origin: str
    fingerprint: str = ""


def _requirement_of(metadata: str) -> str | None:
    """The ``apache-tvm-ffi`` requirement of a distribution's METADATA text, as pip takes it
    (``apache-tvm-ffi<0.2,>=0.1.11``), or None."""
    for m in _TVM_FFI_REQ.finditer(metadata):
        if m.group(2) and "extra" in m.group(2):
            continue
        return TVM_FFI_DIST + re.sub(r"\s+", "", m.group(1))
    return None


def _wheel_requirement(path: Path, zf: zipfile.ZipFile, names: list[str]) -> str | None:
    """The TVM FFI requirement in the METADATA of the wheel ``zf`` (open, from ``path``)."""
    meta = [n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if not meta:
        return None
    try:
        text = zf.read(meta[0]).decode("utf-8", "replace")
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
        raise _damaged(path, exc) from None
    return _requirement_of(text)


def _installed_requirement(root: Path) -> str | None:
    """The requirement in the dist-info beside an installed ``flashinfer`` package dir."""
    for info in sorted(root.parent.glob("flashinfer*.dist-info")):
        try:
            return _requirement_of(read_text(info / "METADATA", errors="replace"))
        except BadInput:
            continue
    return None


def _write_requirement(base: Path, requirement: str | None) -> None:
    path = base / _REQUIREMENT_FILE
    text = (requirement or "") + "\n"
    try:
        if not path.is_file() or path.read_text() != text:
            tmp = path.with_name(path.name + f".{os.getpid()}")
            tmp.write_text(text)
            os.replace(tmp, path)
    except OSError:
        pass  # read back by flashinfer_of only; without it the headers are looked up beside


def _read_requirement(base: Path) -> str | None:
    try:
        return (base / _REQUIREMENT_FILE).read_text().strip() or None
    except OSError:
        return None


def _tvm_include_in(folder: Path) -> Path | None:
    inc = folder / "tvm_ffi" / "include"
    return inc if (inc / "tvm" / "ffi").is_dir() else None


def tvm_ffi_headers(install: FlashinferInstall, *, fetch: bool = True) -> TvmFfiHeaders:
    """The TVM FFI headers the install's bindings build with (``#include <tvm/ffi/...>``,
    ``<dlpack/dlpack.h>``), as flashinfer's build finds them: the ``apache-tvm-ffi``
    installed beside the install (``<site-packages>/tvm_ffi/include``, what
    ``tvm_ffi.libinfo.find_include_path()`` returns there; for a checkout, the one installed
    in this environment), else the newest release the install's metadata (a checkout's
    ``requirements.txt``) admits (:attr:`FlashinferInstall.tvm_ffi_requirement`; flashinfer
    0.7.x: ``apache-tvm-ffi<0.2,>=0.1.11``), its wheel fetched into the cache like any other
    (``fetch=False``: only if it is there already) and its ``tvm_ffi/include`` unpacked.

    Never raises for a missing or unfetchable distribution: the answer's ``include`` is then
    None and its ``origin`` says why (the sources that include those headers then fail with
    their own "file not found").
    """
    beside = _tvm_include_in(install.root.parent)
    if beside is not None:
        return TvmFfiHeaders(beside, f"{TVM_FFI_DIST} beside the install ({beside})",
                             "dir:" + _stat_fingerprint(beside))
    if install.checkout is not None:  # a checkout's build uses the apache-tvm-ffi installed here
        with contextlib.suppress(md.PackageNotFoundError):
            here = _tvm_include_in(Path(str(md.distribution(TVM_FFI_DIST).locate_file(""))))
            if here is not None:
                return TvmFfiHeaders(here, f"{TVM_FFI_DIST} installed here ({here})",
                                     "dir:" + _stat_fingerprint(here))
    spec = install.tvm_ffi_requirement
    if spec is None:
        return TvmFfiHeaders(None, f"{TVM_FFI_DIST} is not installed beside the install "
                                   f"({install.root.parent}) and its metadata names no version")
    safe = re.sub(r"[^A-Za-z0-9._=-]", "_", spec)
    whl = next((w for d in [cache_dir("wheels", safe), *fallback_dirs("wheels", safe)]
                if (w := _usable_wheel(d)) is not None), None)
    if whl is None and not fetch:
        return TvmFfiHeaders(None, f"{spec} has not been fetched into the cache")
    try:
        if whl is None:
            whl = fetch_wheel(spec)
        digest = _sha256_file(whl)[:16]
        dest = cache_dir("trees", digest) / _TVM_FFI_INCLUDE
        if not _complete(dest, _MARKER):
            with lock(f"tree-{digest}-tvm-ffi"):
                if not _complete(dest, _MARKER):
                    with _open_wheel(whl) as zf:
                        if not any(n.startswith(_TVM_FFI_INCLUDE + "tvm/ffi/") for n in zf.namelist()):
                            raise BadInput(f"{whl.name} has no {_TVM_FFI_INCLUDE}tvm/ffi headers")
                    _unpack_tree(whl, _TVM_FFI_INCLUDE, dest)
    except BadInput as exc:
        return TvmFfiHeaders(None, f"{spec}: {exc}")
    return TvmFfiHeaders(dest, f"{spec} (wheel {whl.name})", f"wheel:{digest}")


# ============================================================================================
# CUTLASS's own kernel library (what `audit` reads of nvidia-cutlass or a CUTLASS checkout)

#: The package of CUTLASS's kernel library, and the modules that enumerate it (a folder
#: holding them all is the library)
LIBRARY_PACKAGE = "cutlass_library"
LIBRARY_MODULES = ("generator.py", "manifest.py", "library.py", "gemm_operation.py")
#: The distribution that ships the library as a wheel
LIBRARY_DIST = "nvidia-cutlass"
_LIBRARY_SPEC = re.compile(r"^nvidia[-_]cutlass\s*==", re.I)
_LIBRARY_WHEEL = re.compile(r"^nvidia_cutlass-", re.I)
#: Names of the installed library: its distribution and its package
_LIBRARY_NAMES = ("nvidia-cutlass", "nvidia_cutlass", LIBRARY_PACKAGE)
#: Where an nvidia-cutlass wheel keeps CUTLASS's utilities, below its package
_UTIL_IN_PACKAGE = "source/tools/util/include"


@dataclass(frozen=True)
class KernelLibrary:
    """CUTLASS's own kernel library (``python/cutlass_library``: the profiler's kernel
    generator, manifest and emitters) and the CUTLASS headers it emits kernels for.

    Attributes:
        root: the folder holding the ``cutlass_library`` package (what goes on ``sys.path``).
        tree: the CUTLASS include tree: the wheel's ``cutlass_library/source/include``, a
            checkout's ``include``.
        version: the tree's CUTLASS version (``cutlass/version.h``).
        origin: what the user named and how it was found.
        fingerprint: ``py:`` and 16 hex digits of the SHA-256 of the package's Python files
            (names and contents): what its enumeration depends on.
        util_include: CUTLASS's utilities, ``tools/util/include`` (the wheel's
            ``cutlass_library/source/tools/util/include``, unpacked beside the package; a
            checkout's), which the library's own operation wrappers include for every kernel
            (:data:`cutlass_layout.installs.kernel_library.UTIL_HEADER`); None where there are none.
    """

    root: Path
    tree: CutlassTree
    version: str
    origin: str
    fingerprint: str
    util_include: Path | None = None


def _library_package(path: Path) -> Path | None:
    """The ``cutlass_library`` package folder at or just below ``path`` (the package itself,
    a site-packages or unpacked wheel holding it, a CUTLASS checkout's root or ``python/``)."""
    for cand in (path, path / LIBRARY_PACKAGE, path / "python" / LIBRARY_PACKAGE):
        if cand.name == LIBRARY_PACKAGE and all((cand / m).is_file() for m in LIBRARY_MODULES):
            return cand
    return None


def is_kernel_library(src) -> bool:
    """Whether ``src`` names CUTLASS's kernel library rather than a flashinfer install:
    ``nvidia-cutlass==VERSION``, an ``nvidia_cutlass-*.whl``, ``nvidia-cutlass`` or
    ``cutlass_library`` (the installed one), or a folder with the ``cutlass_library`` package (:func:`resolve_kernel_library` takes these). Reads no
    archive and fetches nothing."""
    if src is None or isinstance(src, KernelLibrary):
        return isinstance(src, KernelLibrary)
    if not isinstance(src, (str, os.PathLike)):
        return False
    text = os.fspath(src)
    if _LIBRARY_SPEC.match(text.strip()) or text.strip().lower() in _LIBRARY_NAMES:
        return True
    path = Path(text).expanduser()
    if path.suffix == ".whl":
        return bool(_LIBRARY_WHEEL.match(path.name))
    return path.is_dir() and _library_package(path) is not None


def _library_fingerprint(package: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(package.glob("*.py")):
        h.update(f.name.encode() + b"\0")
        try:
            h.update(f.read_bytes())
        except OSError as exc:
            raise BadInput(f"cannot read {f}: {exc.strerror or exc}") from None
        h.update(b"\0")
    return "py:" + h.hexdigest()[:16]


def _library_from_wheel(path: Path, origin: str) -> KernelLibrary:
    """The library of an nvidia-cutlass wheel: its ``cutlass_library/*.py`` unpacked into the
    cache (``libraries/<digest>/``, not the headers: the tree is unpacked as
    :func:`resolve_cutlass` unpacks it)."""
    digest = _sha256_file(path)[:16]
    dest = cache_dir("libraries", f"{digest}-py-util")  # what is unpacked: the .py files, the utilities
    if not _complete(dest, _MARKER):
        with lock(f"library-{digest}"):
            if not _complete(dest, _MARKER):
                with _open_wheel(path) as zf:
                    prefix = LIBRARY_PACKAGE + "/"
                    members = _members(zf, prefix, keep=lambda n: (n.endswith(".py") and "/source/" not in n)
                                       or n.startswith(prefix + _UTIL_IN_PACKAGE + "/"))
                    if not all(any(rel == m for _, rel in members) for m in LIBRARY_MODULES):
                        raise BadInput(f"{path} has no {LIBRARY_PACKAGE} package (its "
                                       f"{', '.join(LIBRARY_MODULES)})")
                    tmp = Path(tempfile.mkdtemp(dir=cache_dir("libraries"), prefix=".unpack-"))
                    try:
                        _unpack(path, zf, members, tmp / LIBRARY_PACKAGE, LIBRARY_PACKAGE)
                        (tmp / _MARKER).write_text(f"{path.name}\n{_manifest(tmp)}\n")
                        os.chmod(tmp, 0o777 & ~_umask())
                        if dest.exists():
                            shutil.rmtree(dest, ignore_errors=True)
                        os.replace(tmp, dest)
                    finally:
                        if tmp.exists():
                            shutil.rmtree(tmp, ignore_errors=True)
    tree = resolve_cutlass(path)
    package = dest / LIBRARY_PACKAGE
    return KernelLibrary(root=dest, tree=tree, version=tree.version, origin=origin,
                         fingerprint=_library_fingerprint(package),
                         util_include=_util_include(package / _UTIL_IN_PACKAGE))


def _util_include(path: Path) -> Path | None:
    """``path`` where it holds CUTLASS's utilities (``cutlass/util/``), else None."""
    return path if (path / "cutlass" / "util").is_dir() else None


def resolve_kernel_library(src) -> KernelLibrary:
    """Resolve what the user named to a :class:`KernelLibrary`: ``nvidia-cutlass==VERSION``
    (that wheel, fetched into the cache), an nvidia-cutlass ``.whl``, a site-packages (or any
    folder) holding ``cutlass_library``, the package folder itself (its headers in its
    ``source/include``), a CUTLASS git checkout (``python/cutlass_library`` and
    ``include/``), or ``nvidia-cutlass`` (``cutlass_library``): the one installed here.

    Raises:
        BadInput: no library there, no CUTLASS headers beside it, a damaged wheel, no such wheel.
    """
    if isinstance(src, KernelLibrary):
        return src
    text = os.fspath(src).strip()
    if _LIBRARY_SPEC.match(text):
        whl, origin = _wheel_origin(text)
        return _library_from_wheel(whl, origin)
    if text.lower() in _LIBRARY_NAMES and not Path(text).exists():  # the one installed here
        try:
            dist = md.distribution(LIBRARY_DIST)
        except md.PackageNotFoundError:
            raise BadInput(f"{LIBRARY_DIST} is not installed in this environment: name it as "
                           f"{LIBRARY_DIST}==VERSION, a wheel or a folder") from None
        text = str(dist.locate_file(""))
    path = Path(text).expanduser()
    if not path.exists():
        raise BadInput(f"path does not exist: {text}")
    if path.is_file():
        if path.suffix != ".whl":
            raise BadInput(f"{path} is a file, not a folder with {LIBRARY_PACKAGE} or an nvidia-cutlass wheel")
        return _library_from_wheel(path, f"wheel {path}")
    package = _library_package(path)
    if package is None:
        raise BadInput(f"no {LIBRARY_PACKAGE} package ({', '.join(LIBRARY_MODULES)}) in {path}, "
                       f"{path / LIBRARY_PACKAGE} or {path / 'python' / LIBRARY_PACKAGE}")
    headers = [package / "source" / "include", package.parent.parent / "include"]
    include = next((h for h in headers if _is_tree(h)), None)
    if include is None:
        raise BadInput(f"{package} has no CUTLASS headers beside it (looked in "
                       f"{', '.join(str(h) for h in headers)})")
    tree = _tree(include, f"directory {include}")
    return KernelLibrary(root=package.parent, tree=tree, version=tree.version,
                         origin=f"directory {path}", fingerprint=_library_fingerprint(package),
                         util_include=_util_include(include.parent / "tools" / "util" / "include"))
