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

Wheels are read without installing them; only the members below the chosen include root are
unpacked, once, into the user cache (:mod:`.wheels`). A tree's identity, its files' digests and
hash, is :mod:`.digests`'; flashinfer installs are :mod:`.flashinfer`, CUTLASS's own kernel
library :mod:`.library`.

Where a source holds several trees (vLLM keeps two), the error lists them; pick one with
``SOURCE#SUBPATH`` (e.g. ``vllm#vllm/third_party/deep_gemm/include``) or pass the path.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from ..core.cache import KINDS, cache_dir, lock
from ..core.files import file_kind, read_text
from .digests import MARKER, tree_hash
from .gitsource import checkout as git_checkout, is_git_source
from .wheels import complete, open_wheel, sha256_file, unpack_tree, wheel_origin

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
    ("CMakeLists.txt", re.compile(r"^[ \t]*project[ \t]*\([ \t]*CUTLASS[ \t]+VERSION[ \t]+([^\s)]+)", re.M | re.I)),
    ("CHANGELOG.md", re.compile(r"^##[ \t]*\[([^\]\n]*)\]", re.M)),
    ("python/setup.py", re.compile(r"^[ \t]*version[ \t]*=[ \t]*['\"]([^'\"\n]*)['\"]", re.M)),
)
#: A version a marker may name (the first match of its pattern, else the marker is passed over).
_SEMVER = re.compile(r"\d+\.\d+\.\d+")


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
_MARKER_NAMES = {
    "CMakeLists.txt": "CMakeLists.txt project()",
    "CHANGELOG.md": "CHANGELOG.md heading",
    "python/setup.py": "python/setup.py version",
}


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


def is_tree(path: Path) -> bool:
    return any((path / f).is_file() for f in _TREE_FILES)


def find_trees(top: Path) -> list[Path]:
    """Every CUTLASS include root below ``top`` (sorted), without walking into one found.

    A root is a directory (``top`` itself, or one below it) holding ``cutlass/version.h``
    or ``cutlass/cutlass.h``. Hidden, cache and test directories are skipped; depth is
    bounded to 10 levels.
    """
    top = Path(top)
    if is_tree(top):
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
            if is_tree(sub):
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


def cutlass_tree(root: Path, origin: str) -> CutlassTree:
    root = Path(root).resolve()
    version, where = tree_version(root)
    return CutlassTree(include_root=root, version=version, origin=origin, version_from=where)


def _from_dir(path: Path, sub: str | None, origin: str) -> CutlassTree:
    if sub:
        chosen = path / sub
        if not is_tree(chosen):
            raise BadInput(f"{chosen} is not a CUTLASS include tree (no cutlass/cutlass.h or cutlass/version.h)")
        return cutlass_tree(chosen, origin)
    trees = find_trees(path)
    root = _pick(
        trees,
        str(path),
        f"pick one as {path}#SUBPATH, or give its path",
        shown=lambda t: os.path.relpath(t, path),
    )
    return cutlass_tree(root, origin)


def _wheel_roots(zf: zipfile.ZipFile) -> list[str]:
    roots = set()
    for name in zf.namelist():
        for f in _TREE_FILES:
            if name.endswith("/" + f) or name == f:
                prefix = name[: -len(f)]
                if prefix == "" or prefix.endswith("include/"):
                    roots.add(prefix)
    return sorted(roots)


def _cached_wheel_roots(path: Path, digest: str) -> list[str]:
    """:func:`_wheel_roots` of a wheel, remembered in the cache per wheel digest (so a big
    wheel's directory is not read on every run: docs/performance.md)."""

    def load(d):
        if not (isinstance(d, list) and all(isinstance(r, str) for r in d)):
            raise TypeError(d)
        return d

    def compute():
        with open_wheel(path) as zf:
            return _wheel_roots(zf)

    return KINDS["wheel-roots"].memo(KINDS["wheel-roots"].identity_key(digest), compute, load=load)


def from_wheel(path: Path, sub: str | None, origin: str) -> CutlassTree:
    full = sha256_file(path)
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
    if not complete(dest, MARKER):
        with lock(f"tree-{full[:16]}-{hashlib.sha256(prefix.encode()).hexdigest()[:8]}"):
            if not complete(dest, MARKER):  # another process may have unpacked it meanwhile
                unpack_tree(path, prefix, dest)
    return cutlass_tree(dest, origin)


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
        raise BadInput(f"{name!r} is neither an existing path nor an installed distribution") from None
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
    return cutlass_tree(root, origin)


def _from_environment() -> CutlassTree | None:
    for dist_name in ENV_DISTS:
        try:
            dist = md.distribution(dist_name)
        except md.PackageNotFoundError:
            continue
        for d in _dist_dirs(dist):
            trees = find_trees(d)
            if trees:
                return cutlass_tree(trees[0], f"installed {dist_name} {dist.version}")
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
    * ``git+URL[@REF]``: that repository at that tag, branch or commit, cloned shallowly (with
      its submodules) into the cache once per commit (:mod:`.gitsource`), then read as a checkout;
    * any of these followed by ``#SUBPATH`` to choose one tree where there are several.

    Raises:
        BadInput: missing path, no CUTLASS found, several found and none chosen, no wheel, a git
            URL that cannot be cloned (:func:`.gitsource.checkout`).
    """
    if isinstance(src, CutlassTree):
        return src
    if src is None:
        found = _from_environment()
        if found is not None:
            return found
        whl, origin = wheel_origin(DEFAULT_WHEEL)  # "downloaded into the cache" once, then "cached"
        return from_wheel(whl, None, f"default {origin}")
    text = os.fspath(src)
    if is_git_source(text):
        clone, origin, sub = git_checkout(text)
        return _from_dir(clone, sub, origin)
    sub = None
    if "#" in text:
        text, sub = text.split("#", 1)
    path = Path(text).expanduser()
    if path.exists():
        if path.is_file():
            if path.suffix == ".whl":
                return from_wheel(path, sub, f"wheel {path}")
            raise BadInput(f"{path} is a file, not a directory or a .whl wheel")
        if not path.is_dir():
            raise BadInput(f"{path} is {file_kind(path)}, not a directory or a .whl wheel")
        return _from_dir(path, sub, f"directory {path}")
    if "==" in text:
        whl, origin = wheel_origin(text)
        return from_wheel(whl, sub, origin)
    if os.sep in text or text.endswith(".whl") or text.startswith("."):
        raise BadInput(f"path does not exist: {text}")
    return _from_dist(text, sub, f"installed {text}")
