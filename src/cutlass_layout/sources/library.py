"""CUTLASS's own kernel library (what ``audit`` reads of nvidia-cutlass or a CUTLASS checkout):
the ``cutlass_library`` package (``python/cutlass_library`` in CUTLASS: the profiler's kernel
generator, manifest and emitters), the CUTLASS headers it emits kernels for and CUTLASS's
utilities (``tools/util/include``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from ..core.cache import cache_dir, lock
from .digests import MARKER
from .gitsource import checkout as git_checkout, is_git_source
from .trees import CutlassTree, cutlass_tree, is_tree, resolve_cutlass
from .wheels import complete, manifest, open_wheel, sha256_file, umask, unpack, wheel_members, wheel_origin


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
    ``cutlass_library`` (the installed one), or a folder with the ``cutlass_library`` package, or a
    ``git+URL[@REF]`` whose commit has it (:func:`resolve_kernel_library` takes these). Reads no
    archive and fetches nothing, but a git URL, which is cloned into the cache (once per commit,
    :mod:`.gitsource`) to be looked at."""
    if src is None or isinstance(src, KernelLibrary):
        return isinstance(src, KernelLibrary)
    if not isinstance(src, (str, os.PathLike)):
        return False
    text = os.fspath(src)
    if is_git_source(text):
        return _library_package(git_checkout(text)[0]) is not None
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
    digest = sha256_file(path)[:16]
    dest = cache_dir("libraries", f"{digest}-py-util")  # what is unpacked: the .py files, the utilities
    if not complete(dest, MARKER):
        with lock(f"library-{digest}"):
            if not complete(dest, MARKER):
                with open_wheel(path) as zf:
                    prefix = LIBRARY_PACKAGE + "/"
                    members = wheel_members(
                        zf,
                        prefix,
                        keep=lambda n: (
                            (n.endswith(".py") and "/source/" not in n) or n.startswith(prefix + _UTIL_IN_PACKAGE + "/")
                        ),
                    )
                    if not all(any(rel == m for _, rel in members) for m in LIBRARY_MODULES):
                        raise BadInput(f"{path} has no {LIBRARY_PACKAGE} package (its {', '.join(LIBRARY_MODULES)})")
                    tmp = Path(tempfile.mkdtemp(dir=cache_dir("libraries"), prefix=".unpack-"))
                    try:
                        unpack(path, zf, members, tmp / LIBRARY_PACKAGE, LIBRARY_PACKAGE)
                        (tmp / MARKER).write_text(f"{path.name}\n{manifest(tmp)}\n")
                        os.chmod(tmp, 0o777 & ~umask())
                        if dest.exists():
                            shutil.rmtree(dest, ignore_errors=True)
                        os.replace(tmp, dest)
                    finally:
                        if tmp.exists():
                            shutil.rmtree(tmp, ignore_errors=True)
    tree = resolve_cutlass(path)
    package = dest / LIBRARY_PACKAGE
    return KernelLibrary(
        root=dest,
        tree=tree,
        version=tree.version,
        origin=origin,
        fingerprint=_library_fingerprint(package),
        util_include=_util_include(package / _UTIL_IN_PACKAGE),
    )


def _util_include(path: Path) -> Path | None:
    """``path`` where it holds CUTLASS's utilities (``cutlass/util/``), else None."""
    return path if (path / "cutlass" / "util").is_dir() else None


def resolve_kernel_library(src) -> KernelLibrary:
    """Resolve what the user named to a :class:`KernelLibrary`: ``nvidia-cutlass==VERSION``
    (that wheel, fetched into the cache), an nvidia-cutlass ``.whl``, a site-packages (or any
    folder) holding ``cutlass_library``, the package folder itself (its headers in its
    ``source/include``), a CUTLASS git checkout (``python/cutlass_library`` and
    ``include/``), ``git+URL[@REF]`` (that commit, cloned into the cache once:
    :mod:`.gitsource`), or ``nvidia-cutlass`` (``cutlass_library``): the one installed here.

    Raises:
        BadInput: no library there, no CUTLASS headers beside it, a damaged wheel, no such wheel,
            a git URL that cannot be cloned.
    """
    if isinstance(src, KernelLibrary):
        return src
    text = os.fspath(src).strip()
    if is_git_source(text):
        clone, origin, _ = git_checkout(text)
        return _library_from_dir(clone, origin)
    if _LIBRARY_SPEC.match(text):
        whl, origin = wheel_origin(text)
        return _library_from_wheel(whl, origin)
    if text.lower() in _LIBRARY_NAMES and not Path(text).exists():  # the one installed here
        try:
            dist = md.distribution(LIBRARY_DIST)
        except md.PackageNotFoundError:
            raise BadInput(
                f"{LIBRARY_DIST} is not installed in this environment: name it as "
                f"{LIBRARY_DIST}==VERSION, a wheel or a folder"
            ) from None
        text = str(dist.locate_file(""))
    path = Path(text).expanduser()
    if not path.exists():
        raise BadInput(f"path does not exist: {text}")
    if path.is_file():
        if path.suffix != ".whl":
            raise BadInput(f"{path} is a file, not a folder with {LIBRARY_PACKAGE} or an nvidia-cutlass wheel")
        return _library_from_wheel(path, f"wheel {path}")
    return _library_from_dir(path, f"directory {path}")


def _library_from_dir(path: Path, origin: str) -> KernelLibrary:
    """The library in the folder ``path`` (:func:`resolve_kernel_library`), named by ``origin``."""
    package = _library_package(path)
    if package is None:
        raise BadInput(
            f"no {LIBRARY_PACKAGE} package ({', '.join(LIBRARY_MODULES)}) in {path}, "
            f"{path / LIBRARY_PACKAGE} or {path / 'python' / LIBRARY_PACKAGE}"
        )
    headers = [package / "source" / "include", package.parent.parent / "include"]
    include = next((h for h in headers if is_tree(h)), None)
    if include is None:
        raise BadInput(f"{package} has no CUTLASS headers beside it (looked in {', '.join(str(h) for h in headers)})")
    tree = cutlass_tree(include, origin if origin.startswith("git ") else f"directory {include}")
    return KernelLibrary(
        root=package.parent,
        tree=tree,
        version=tree.version,
        origin=origin,
        fingerprint=_library_fingerprint(package),
        util_include=_util_include(include.parent / "tools" / "util" / "include"),
    )
