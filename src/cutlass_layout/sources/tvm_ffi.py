"""The TVM FFI headers flashinfer's bindings include (``tvm/ffi/*.h``, ``dlpack/dlpack.h``):
what an install's metadata requires of ``apache-tvm-ffi``, and where those headers are found
(:func:`tvm_ffi_headers`), as flashinfer's build finds them (``get_system_includes`` in
``flashinfer/jit/cpp_ext.py``).
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInput
from ..core.cache import cache_dir, fallback_dirs, lock
from ..core.files import read_text
from .digests import MARKER, REQUIREMENT_FILE, stat_fingerprint
from .wheels import complete, damaged, fetch_wheel, open_wheel, sha256_file, unpack_tree, usable_wheel

if TYPE_CHECKING:
    from .flashinfer import FlashinferInstall


#: The distribution that ships ``tvm/ffi/*.h`` and ``dlpack/dlpack.h`` (``tvm_ffi/include``),
#: which flashinfer's build puts on every module's ``-isystem`` path
#: (``get_system_includes`` in ``flashinfer/jit/cpp_ext.py``: ``tvm_ffi.libinfo.find_include_path()``).
TVM_FFI_DIST = "apache-tvm-ffi"
_TVM_FFI_INCLUDE = "tvm_ffi/include/"
#: ``Requires-Dist: apache-tvm-ffi<0.2,>=0.1.11`` (or ``apache-tvm-ffi (<0.2,>=0.1.11)``),
#: without an environment marker (an ``extra ==`` one is an optional requirement).
_TVM_FFI_REQ = re.compile(
    r"^Requires-Dist:[ \t]*apache[-_.]tvm[-_.]ffi[ \t]*\(?([^;()\n]*)\)?[ \t]*(;[^\n]*)?$", re.M | re.I
)


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


def requirement_of(metadata: str) -> str | None:
    """The ``apache-tvm-ffi`` requirement of a distribution's METADATA text, as pip takes it
    (``apache-tvm-ffi<0.2,>=0.1.11``), or None."""
    for m in _TVM_FFI_REQ.finditer(metadata):
        if m.group(2) and "extra" in m.group(2):
            continue
        return TVM_FFI_DIST + re.sub(r"\s+", "", m.group(1))
    return None


def wheel_requirement(path: Path, zf: zipfile.ZipFile, names: list[str]) -> str | None:
    """The TVM FFI requirement in the METADATA of the wheel ``zf`` (open, from ``path``)."""
    meta = [n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if not meta:
        return None
    try:
        text = zf.read(meta[0]).decode("utf-8", "replace")
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
        raise damaged(path, exc) from None
    return requirement_of(text)


def installed_requirement(root: Path) -> str | None:
    """The requirement in the dist-info beside an installed ``flashinfer`` package dir."""
    for info in sorted(root.parent.glob("flashinfer*.dist-info")):
        try:
            return requirement_of(read_text(info / "METADATA", errors="replace"))
        except BadInput:
            continue
    return None


def write_requirement(base: Path, requirement: str | None) -> None:
    path = base / REQUIREMENT_FILE
    text = (requirement or "") + "\n"
    try:
        if not path.is_file() or path.read_text() != text:
            tmp = path.with_name(path.name + f".{os.getpid()}")
            tmp.write_text(text)
            os.replace(tmp, path)
    except OSError:
        pass  # read back by flashinfer_of only; without it the headers are looked up beside


def read_requirement(base: Path) -> str | None:
    try:
        return (base / REQUIREMENT_FILE).read_text().strip() or None
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
        return TvmFfiHeaders(beside, f"{TVM_FFI_DIST} beside the install ({beside})", "dir:" + stat_fingerprint(beside))
    if install.checkout is not None:  # a checkout's build uses the apache-tvm-ffi installed here
        with contextlib.suppress(md.PackageNotFoundError):
            here = _tvm_include_in(Path(str(md.distribution(TVM_FFI_DIST).locate_file(""))))
            if here is not None:
                return TvmFfiHeaders(here, f"{TVM_FFI_DIST} installed here ({here})", "dir:" + stat_fingerprint(here))
    spec = install.tvm_ffi_requirement
    if spec is None:
        return TvmFfiHeaders(
            None,
            f"{TVM_FFI_DIST} is not installed beside the install "
            f"({install.root.parent}) and its metadata names no version",
        )
    safe = re.sub(r"[^A-Za-z0-9._=-]", "_", spec)
    whl = next(
        (w for d in [cache_dir("wheels", safe), *fallback_dirs("wheels", safe)] if (w := usable_wheel(d)) is not None),
        None,
    )
    if whl is None and not fetch:
        return TvmFfiHeaders(None, f"{spec} has not been fetched into the cache")
    try:
        if whl is None:
            whl = fetch_wheel(spec)
        digest = sha256_file(whl)[:16]
        dest = cache_dir("trees", digest) / _TVM_FFI_INCLUDE
        if not complete(dest, MARKER):
            with lock(f"tree-{digest}-tvm-ffi"):
                if not complete(dest, MARKER):
                    with open_wheel(whl) as zf:
                        if not any(n.startswith(_TVM_FFI_INCLUDE + "tvm/ffi/") for n in zf.namelist()):
                            raise BadInput(f"{whl.name} has no {_TVM_FFI_INCLUDE}tvm/ffi headers")
                    unpack_tree(whl, _TVM_FFI_INCLUDE, dest)
    except BadInput as exc:
        return TvmFfiHeaders(None, f"{spec}: {exc}")
    return TvmFfiHeaders(dest, f"{spec} (wheel {whl.name})", f"wheel:{digest}")
