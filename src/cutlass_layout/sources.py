"""Find a CUTLASS include tree: a directory, a checkout, a wheel, an installed distribution.

A *CUTLASS tree* is a directory ``R`` with ``R/cutlass/version.h`` (and ``R/cute``): the
``include/`` directory of a CUTLASS checkout. Installs keep it in different places
(``flashinfer/data/cutlass/include``, ``cutlass_library/source/include``,
``deep_gemm/include``, ``vllm/third_party/*/include``); :func:`resolve_cutlass` finds it by
looking for ``**/include/cutlass/version.h`` and never walks into a tree it found.

Wheels are read with :mod:`zipfile` without installing them; only the members below the
chosen include root are unpacked, once, into the user cache, keyed by the wheel's SHA-256.

Where a source holds several trees (vLLM keeps two), the error lists them; pick one with
``SOURCE#SUBPATH`` (e.g. ``vllm#vllm/third_party/deep_gemm/include``) or pass the path.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .cache import cache_dir
from .errors import BadInput

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
_MARKER = ".cutlass-layout-complete"  # written beside an unpacked tree, not part of it


@dataclass(frozen=True)
class CutlassTree:
    """A CUTLASS include tree ready to be parsed.

    Attributes:
        include_root: directory holding ``cutlass/`` and ``cute/``.
        version: ``MAJOR.MINOR.PATCH`` read from ``cutlass/version.h`` (not always right:
            tag v4.1.0 says 4.0.0; compare ``tree_hash`` to tell trees apart).
        origin: what the user named (path, wheel, distribution) and how it was found.
    """

    include_root: Path
    version: str
    origin: str

    @property
    def tree_hash(self) -> str:
        """See :func:`tree_hash`."""
        return tree_hash(self.include_root)


#: File name endings of C++ headers (the files ``scan`` and ``diff`` read).
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inl", ".hxx")


def tree_files(top, *, hidden: bool = True) -> list[str]:
    """Every file below ``top``, as paths relative to it (``/``-separated), sorted. Links to
    directories are not followed; with ``hidden=False`` directories whose name starts with
    ``.`` (``.git``) are not entered. The one walk over a tree that every command uses."""
    top = os.fspath(top)
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        if not hidden:
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel = os.path.relpath(dirpath, top)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        out.extend(prefix + name for name in filenames)
    out.sort()
    return out


def is_header(rel: str) -> bool:
    """Whether a relative path from :func:`tree_files` is a header (:data:`HEADER_SUFFIXES`)
    outside hidden directories."""
    return rel.endswith(HEADER_SUFFIXES) and not any(p.startswith(".") for p in rel.split("/")[:-1])


def header_files(top) -> list[str]:
    """The headers below ``top`` (see :func:`is_header`), as :func:`tree_files` gives them."""
    return [r for r in tree_files(top, hidden=False) if is_header(r)]


#: Per process: a root's tree hash (keyed by the root as given, and resolved), and its
#: file digests (keyed by ``(resolved root, "files")``).
_TREE_HASHES: dict = {}


def file_digests(root) -> dict[str, bytes]:
    """SHA-256 of every file below ``root`` (but the cache's own marker beside an unpacked
    tree), by path relative to it, in :func:`tree_files` order. Read once per process."""
    root = Path(root).resolve()
    if (root, "files") not in _TREE_HASHES:
        out = {}
        for rel in tree_files(root):
            if rel.rsplit("/", 1)[-1] == _MARKER:
                continue
            with open(root / rel, "rb") as fh:
                out[rel] = hashlib.sha256(fh.read()).digest()
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
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    parts = []
    for key in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"#\s*define\s+CUTLASS_{key}\s+(\d+)", text)
        if not m:
            raise BadInput(f"{path} has no CUTLASS_{key}: not a CUTLASS version header")
        parts.append(m.group(1))
    return ".".join(parts)


def _is_tree(path: Path) -> bool:
    return (path / _VERSION_H).is_file()


def find_trees(top: Path) -> list[Path]:
    """Every CUTLASS include root below ``top`` (sorted), without walking into one found.

    A root is a directory named ``include`` (or ``top`` itself) holding
    ``cutlass/version.h``. Hidden, cache and test directories are skipped; depth is
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
        raise BadInput(f"no CUTLASS headers (cutlass/version.h) in {what}")
    if len(candidates) > 1:
        listed = ", ".join(shown(c) for c in candidates[:_SHOWN_TREES])
        if len(candidates) > _SHOWN_TREES:
            listed += f" and {len(candidates) - _SHOWN_TREES} more"
        raise BadInput(f"{what} holds {len(candidates)} CUTLASS trees: {listed}; {how}")
    return candidates[0]


def _tree(root: Path, origin: str) -> CutlassTree:
    root = Path(root).resolve()
    return CutlassTree(include_root=root, version=read_version(root), origin=origin)


def _from_dir(path: Path, sub: str | None, origin: str) -> CutlassTree:
    if sub:
        chosen = path / sub
        if not _is_tree(chosen):
            raise BadInput(f"{chosen} is not a CUTLASS include tree (no cutlass/version.h)")
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
    roots = []
    for name in zf.namelist():
        if name.endswith("/" + _VERSION_H) or name == _VERSION_H:
            prefix = name[: -len(_VERSION_H)]
            if prefix == "" or prefix.endswith("include/"):
                roots.append(prefix)
    return sorted(roots)


def _sha256_file(path: Path) -> str:
    """SHA-256 of a wheel, remembered in the cache per (path, size, mtime): a 60 MB wheel
    is hashed once, not on every run that names it."""
    st = path.stat()
    memo = cache_dir("wheel-digests") / hashlib.sha256(
        f"{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:32]
    try:
        digest = memo.read_text().strip()
        if len(digest) == 64:
            return digest
    except OSError:
        pass
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    try:
        memo.write_text(h.hexdigest())
    except OSError:  # a memo that cannot be written only costs time
        pass
    return h.hexdigest()


def _open_wheel(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BadInput(f"{path} is not a readable wheel: {exc}") from None


def _cached_wheel_roots(path: Path, digest: str) -> list[str]:
    """:func:`_wheel_roots` of a wheel, remembered in the cache per wheel digest (reading a
    big wheel's directory takes about 0.1 s)."""
    memo = cache_dir("wheel-digests") / f"{digest[:32]}.roots"
    try:
        roots = memo.read_text().split("\n")[:-1]
        if roots and roots[0] == digest:
            return roots[1:]
    except OSError:
        pass
    with _open_wheel(path) as zf:
        roots = _wheel_roots(zf)
    try:
        memo.write_text("".join(f"{line}\n" for line in [digest, *roots]))
    except OSError:  # a memo that cannot be written only costs time
        pass
    return roots


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
    marker = dest / _MARKER
    if not marker.is_file():
        with _open_wheel(path) as zf:
            members = [m for m in zf.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
            tmp = Path(tempfile.mkdtemp(dir=cache_dir("trees"), prefix=".unpack-"))
            try:
                for m in members:
                    rel = m.filename[len(prefix):]
                    if ".." in Path(rel).parts or rel.startswith("/"):
                        continue
                    out = tmp / rel
                    out.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(m) as src, open(out, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                (tmp / _MARKER).write_text(f"{path.name}\n")
                if dest.exists():
                    shutil.rmtree(dest)
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp, dest)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
    return _tree(dest, origin)


def fetch_wheel(spec: str) -> Path:
    """Download ``name==version`` (a wheel, never an sdist) into the cache; return its path.

    Uses ``pip download --no-deps --only-binary=:all:``. A second call finds the cached
    file and does not touch the network.

    Raises:
        BadInput: the package index has no wheel for ``spec`` (e.g. flashinfer's 0.2.x-0.4.x
            source-only releases), or pip failed.
    """
    safe = re.sub(r"[^A-Za-z0-9._=-]", "_", spec)
    dest = cache_dir("wheels", safe)
    wheels = sorted(dest.glob("*.whl"))
    if wheels:
        return wheels[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", str(dest), spec]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        lines = [ln for ln in (proc.stderr or "").splitlines() if ln.startswith("ERROR")]
        why = lines[0].removeprefix("ERROR: ") if lines else "pip download failed"
        raise BadInput(f"no wheel for {spec} on the package index ({why})")
    return wheels[0]


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
      vllm (first found), else :data:`DEFAULT_WHEEL` fetched into the cache;
    * an include dir (``.../include`` with ``cutlass/version.h``), a CUTLASS checkout, a
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
        whl = fetch_wheel(DEFAULT_WHEEL)
        return _from_wheel(whl, None, f"default {DEFAULT_WHEEL} (fetched into the cache)")
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
        return _from_dir(path, sub, f"directory {path}")
    if "==" in text:
        whl = fetch_wheel(text)
        return _from_wheel(whl, sub, f"{text} (wheel {whl.name}, cached)")
    if os.sep in text or text.endswith(".whl") or text.startswith("."):
        raise BadInput(f"path does not exist: {text}")
    return _from_dist(text, sub, f"installed {text}")


# ============================================================================================
# flashinfer installs (what `audit` reads)

#: Parts of a flashinfer wheel that ``audit`` unpacks (paths under ``flashinfer/``): the JIT's
#: Python (module builders, the TensorRT-LLM kernel generator, templates' renderers), the
#: top-level modules it reads constants from, the headers its builds include, and the
#: sources and jinja templates directly under ``data/csrc`` (not its many kernel folders).
INSTALL_DIRS = ("jit/", "data/include/", "data/spdlog/", "data/cccl/", "data/csrc/nv_internal/",
                "data/cutlass/tools/")
_INSTALL_MARKER = ".cutlass-layout-install-complete"
_FLASHINFER_DISTS = ("flashinfer-python", "flashinfer")


@dataclass(frozen=True)
class FlashinferInstall:
    """An installed (or unpacked) flashinfer package.

    Attributes:
        root: the ``flashinfer`` package directory (holds ``jit/`` and ``data/``).
        version: flashinfer's version (``_build_meta.py``, else the dist-info), or ``unknown``.
        origin: what the user named and how it was found.
        tree: the CUTLASS tree it ships (``data/cutlass/include``).
        fingerprint: identifies the install's content: the wheel's SHA-256 for a wheel, else
            a hash of every file's path, size and mtime under ``root`` (a changed header changes it).
    """

    root: Path
    version: str
    origin: str
    tree: CutlassTree
    fingerprint: str


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
                          (root / name).read_text(errors="replace"))
        except OSError:
            continue
        if m:
            return m.group(1)
    for info in sorted(root.parent.glob("flashinfer*.dist-info")):
        try:
            m = re.search(r"^Version:\s*(\S+)", (info / "METADATA").read_text(errors="replace"), re.M)
        except OSError:
            continue
        if m:
            return m.group(1)
    return "unknown"


def _stat_fingerprint(root: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            try:
                st = os.stat(p)
            except OSError:
                continue
            h.update(f"{os.path.relpath(p, root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _flashinfer_root(path: Path) -> Path | None:
    for cand in (path, path / "flashinfer"):
        if (cand / "jit").is_dir() and (cand / "data").is_dir():
            return cand
    return None


def _install(root: Path, origin: str, fingerprint: str | None = None) -> FlashinferInstall:
    inc = root / "data" / "cutlass" / "include"
    if not _is_tree(inc):
        raise BadInput(f"the flashinfer package at {root} has no CUTLASS tree (data/cutlass/include)")
    return FlashinferInstall(root=root.resolve(), version=_flashinfer_version(root), origin=origin,
                             tree=_tree(inc, origin), fingerprint=fingerprint or _stat_fingerprint(root))


def _install_from_wheel(path: Path, origin: str) -> FlashinferInstall:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BadInput(f"{path} is not a readable wheel: {exc}") from None
    with zf:
        names = zf.namelist()
        if "flashinfer/jit/__init__.py" not in names and not any(
                n.startswith("flashinfer/jit/") for n in names):
            raise BadInput(f"{path} holds no flashinfer package (flashinfer/jit/)")
        digest = _sha256_file(path)[:16]
        base = cache_dir("trees", digest)
        if not (base / _INSTALL_MARKER).is_file():
            tmp = Path(tempfile.mkdtemp(dir=cache_dir("trees"), prefix=".unpack-"))
            try:
                for m in zf.infolist():
                    if not _wanted_install_member(m.filename) or ".." in Path(m.filename).parts:
                        continue
                    out = tmp / m.filename
                    out.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(m) as src, open(out, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                top = tmp / "flashinfer"
                for entry in sorted(top.rglob("*")) if top.is_dir() else []:
                    rel = entry.relative_to(tmp)
                    dest = base / rel
                    if entry.is_dir():
                        continue
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(entry, dest)
                (base / _INSTALL_MARKER).write_text(f"{path.name}\n")
            except zipfile.BadZipFile as exc:
                raise BadInput(f"{path} is a damaged wheel: {exc}") from None
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    # the CUTLASS include tree is unpacked (and marked complete) as for `--cutlass WHEEL`
    _from_wheel(path, "flashinfer/data/cutlass/include", origin)
    return _install(base / "flashinfer", origin, fingerprint=f"wheel:{digest}")


def resolve_flashinfer(src: str | os.PathLike | None = None) -> FlashinferInstall:
    """Resolve what the user named to a :class:`FlashinferInstall`.

    ``src`` may be ``None`` (the flashinfer installed in this environment), a ``flashinfer``
    package directory or a directory holding one (site-packages, a venv's site-packages), a
    ``.whl`` file (the parts ``audit`` reads, :data:`INSTALL_DIRS`, are unpacked into the user
    cache, keyed by the wheel's SHA-256), ``flashinfer-python==VERSION`` (that wheel, fetched
    into the cache), or an installed distribution name (``flashinfer``, ``flashinfer-python``).

    Raises:
        BadInput: no flashinfer there, no CUTLASS tree in it, a damaged wheel, no such wheel.
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
        root = _flashinfer_root(path)
        if root is None:
            raise BadInput(f"no flashinfer package (flashinfer/jit and flashinfer/data) in {path}")
        return _install(root, f"directory {path}")
    if "==" in text:
        whl = fetch_wheel(text)
        return _install_from_wheel(whl, f"{text} (wheel {whl.name}, cached)")
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
