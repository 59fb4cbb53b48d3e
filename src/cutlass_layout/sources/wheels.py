"""Wheels: read with :mod:`zipfile` without installing them, fetched into the cache by
``pip download`` (:func:`fetch_wheel`), their members unpacked into the cache.

Only the members below a chosen prefix are unpacked, once, into the user cache, keyed by the
wheel's SHA-256 (:func:`sha256_file`): under a lock (processes using a new wheel at once
unpack it once), into a temporary folder renamed into place when complete, within
:data:`~cutlass_layout.core.files.LIMITS`. A damaged wheel (bad CRC, a member that is both a
file and a folder) is bad input. The marker of an unpacked tree holds a digest of every
file's path and size (:func:`manifest`), and a tree that no longer matches it is unpacked
again (:func:`complete`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

from ..errors import BadInput
from ..core.cache import KINDS, cache_dir, fallback_dirs, file_sha256, lock
from ..core.progress import step
from ..core.files import LIMITS, check_limit, file_kind, walk
from .digests import MARKER, MARKERS, TREE_HASHES


def sha256_file(path: Path) -> str:
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


def open_wheel(path: Path) -> zipfile.ZipFile:
    kind = file_kind(path)
    if kind is not None:
        raise BadInput(f"{path} is {kind}, not a wheel file")
    try:
        return zipfile.ZipFile(path)
    except (*_ZIP_ERRORS, OSError) as exc:
        raise BadInput(f"{path} is not a readable wheel: {exc}") from None


def damaged(path: Path, why) -> BadInput:
    return BadInput(f"{path} is a damaged wheel ({why}): fetch or build it again")


def manifest(root: Path, skip: str | None = None) -> str:
    """A digest of every file's path and size below ``root`` (leaving out the folder ``skip``,
    relative, and the markers), in path order: what an unpacked tree's marker records."""
    sizes = []
    for rel, e in walk(root, enter=lambda rel, e: not (skip and (rel + "/").startswith(skip))):
        if e.name in MARKERS:
            continue
        try:
            sizes.append(f"{rel}\0{e.stat().st_size}\n")
        except OSError:
            sizes.append(f"{rel}\0-1\n")
    return hashlib.sha256("".join(sorted(sizes)).encode()).hexdigest()[:32]


def complete(root: Path, marker: str, skip: str | None = None) -> bool:
    """Whether the tree unpacked at ``root`` is whole: its marker names the manifest the
    tree still has (a file removed or cut short since is a miss: unpack it again)."""
    try:
        lines = (root / marker).read_text().split("\n")
    except (OSError, UnicodeDecodeError):
        return False
    if len(lines) == 2 and lines[1] == "":  # a marker of version 0.1.0, written when complete
        return True
    return len(lines) >= 2 and lines[1] == manifest(root, skip)


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def unpack(path: Path, zf: zipfile.ZipFile, members: list[tuple[zipfile.ZipInfo, str]], tmp: Path, what: str) -> None:
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
    os.chmod(tmp, 0o777 & ~umask())  # mkdtemp makes it private: others sharing the cache read it


def _write_members(path: Path, zf: zipfile.ZipFile, members: list[tuple[zipfile.ZipInfo, str]], tmp: Path) -> None:
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
            raise damaged(path, f"{m.filename} is both a file and a folder in it") from None
        except _ZIP_ERRORS as exc:
            raise damaged(path, exc) from None


def wheel_members(zf: zipfile.ZipFile, prefix: str, keep=None) -> list[tuple[zipfile.ZipInfo, str]]:
    """Files of ``zf`` below ``prefix`` (``keep(name)`` chooses), each with its path below it;
    names that climb out (``..``, absolute) are left out."""
    out = []
    for m in zf.infolist():
        if not m.filename.startswith(prefix) or m.is_dir() or (keep and not keep(m.filename)):
            continue
        rel = m.filename[len(prefix) :]
        if rel and ".." not in Path(rel).parts and not rel.startswith("/"):
            out.append((m, rel))
    return out


def unpack_tree(path: Path, prefix: str, dest: Path) -> None:
    """Unpack the members of wheel ``path`` below ``prefix`` as the tree ``dest`` (under the
    caller's lock): into a temporary folder, marked, then renamed into place; an incomplete
    tree there before is moved aside first."""
    trees = cache_dir("trees")
    tmp = Path(tempfile.mkdtemp(dir=trees, prefix=".unpack-"))
    try:
        with open_wheel(path) as zf:
            unpack(path, zf, wheel_members(zf, prefix), tmp, prefix.rstrip("/") or "the tree")
        (tmp / MARKER).write_text(f"{path.name}\n{manifest(tmp)}\n")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            old = Path(tempfile.mkdtemp(dir=trees, prefix=".old-"))
            os.replace(dest, old / "tree")
            shutil.rmtree(old, ignore_errors=True)
        os.replace(tmp, dest)
        here = (dest, dest.resolve())
        for k in [k for k in TREE_HASHES if (k[0] if isinstance(k, tuple) else k) in here]:
            del TREE_HASHES[k]  # the tree there now is another one
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def usable_wheel(folder: Path) -> Path | None:
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


def wheel_origin(spec: str) -> tuple[Path, str]:
    """:func:`fetch_wheel` of ``spec`` and the origin a report names it by: ``SPEC (wheel
    NAME, cached)``, or ``downloaded into the cache`` on the run that fetched it."""
    whl, fetched = _fetch(spec)
    return whl, f"{spec} (wheel {whl.name}, {'downloaded into the cache' if fetched else 'cached'})"


def _fetch(spec: str) -> tuple[Path, bool]:
    """:func:`fetch_wheel`, and whether this call downloaded the wheel."""
    safe = re.sub(r"[^A-Za-z0-9._=-]", "_", spec)
    dest = cache_dir("wheels", safe)
    for folder in [dest, *fallback_dirs("wheels", safe)]:
        whl = usable_wheel(folder)
        if whl is not None:
            return whl, False
    with lock(f"wheel-{hashlib.sha256(safe.encode()).hexdigest()[:16]}"):
        whl = usable_wheel(dest)
        if whl is not None:
            return whl, False
        tmp = Path(tempfile.mkdtemp(dir=cache_dir("wheels"), prefix=".fetch-"))
        try:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "-q",
                "-d",
                str(tmp),
                spec,
            ]
            with step(f"downloading {spec} (pip download)"):
                proc = subprocess.run(cmd, capture_output=True, text=True)
            got = usable_wheel(tmp)
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
