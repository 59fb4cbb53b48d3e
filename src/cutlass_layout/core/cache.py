"""The user cache directory, and the one results cache every command reads and writes.

Nothing is ever written into a user's CUTLASS tree or site-packages; everything that is
derived (unpacked wheels, downloaded wheels, precompiled headers, results) goes below
:func:`cache_dir`.

:class:`ResultCache` stores JSON results under ``<cache>/results/<kind>/``, one file per
key. A key is :func:`result_key` of everything that determines the result (tree hash, the
config's probe text or the generated file, clang flags, libclang version, and
:func:`code_fingerprint` of the code that computes it). Writes are atomic (a temporary file
renamed into place); every entry carries its key and a SHA-256 of its payload, and an entry
whose key or checksum does not match, or that its reader cannot load, is a miss, never a
result. Files too big for JSON (precompiled headers) are :func:`seal`-ed the same way, in a
``.sum`` file beside them.

Several processes may share the cache: work that fills it (unpacking a wheel, building a
precompiled header) runs under a :func:`lock` and is renamed into place when complete. A
cache folder that cannot be written (read-only, a file, no permission) is replaced, for the
rest of the process, by a private temporary one, with a one-line warning on stderr; entries
of the unusable one are still read where they can be (:func:`fallback_dirs`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import orjson
import platformdirs

from ..errors import BadInput

#: Per process: the folder used for each configured cache folder (itself, or a private
#: temporary one when it cannot be written), and the unusable ones still read.
_ROOTS: dict[str, Path] = {}
_READ_ONLY: dict[str, Path] = {}
#: Folders checked to be writable (once per process each).
_CHECKED: set[str] = set()


def _configured() -> Path:
    base = os.environ.get("CUTLASS_LAYOUT_CACHE")
    return Path(base) if base else Path(platformdirs.user_cache_dir("cutlass-layout"))


def _unusable(path: Path) -> str | None:
    """Why ``path`` cannot hold cache entries (``None`` when it can): created if missing."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return "it is a file, not a folder"
    except OSError as exc:
        return exc.strerror or str(exc)
    if not path.is_dir():
        return "it is not a folder"
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        return "it is read-only" if os.access(path, os.R_OK | os.X_OK) else "permission denied"
    return None


def _private(configured: Path, why: str) -> Path:
    """A private temporary cache for this process (removed when it exits), announced once."""
    try:
        tmp = Path(tempfile.mkdtemp(prefix="cutlass-layout-cache-"))
    except OSError as exc:
        raise BadInput(
            f"the cache folder {configured} cannot be used ({why}) and no temporary "
            f"folder can be made ({exc.strerror or exc}): set CUTLASS_LAYOUT_CACHE "
            "to a writable folder"
        ) from None
    owner = os.getpid()

    def remove() -> None:  # in this process only (not a forked worker's exit)
        if os.getpid() == owner:
            shutil.rmtree(tmp, ignore_errors=True)

    atexit.register(remove)
    print(
        f"warning: the cache folder {configured} cannot be used ({why}); using a private "
        f"temporary cache for this run ({tmp}); set CUTLASS_LAYOUT_CACHE to a writable folder "
        "to keep results",
        file=sys.stderr,
        flush=True,
    )
    return tmp


def _fall_back(unusable: Path, why: str) -> None:
    """From now on this process uses a private cache; the configured one is still read."""
    configured = _configured()
    _ROOTS[str(configured)] = _private(unusable, why)
    if configured.is_dir() and os.access(configured, os.R_OK | os.X_OK):
        _READ_ONLY[str(configured)] = configured


def cache_root() -> Path:
    """The cache folder this process uses: ``CUTLASS_LAYOUT_CACHE``, else the user cache dir
    (``~/.cache/cutlass-layout``), else (when that cannot be written) a private temporary one."""
    configured = _configured()
    if str(configured) not in _ROOTS:
        why = _unusable(configured)
        if why is None:
            _ROOTS[str(configured)] = configured
        else:
            _fall_back(configured, why)
    return _ROOTS[str(configured)]


def cache_dir(*parts: str) -> Path:
    """Return (and create) ``<cache root>/<parts...>`` (see :func:`cache_root`).

    ``CUTLASS_LAYOUT_CACHE`` overrides the base directory (tests use it). A folder of the
    configured cache that cannot be written moves the whole process to a private temporary
    cache (once, with a warning).
    """
    path = cache_root().joinpath(*parts)
    key = str(path)
    if key in _CHECKED:
        return path
    why = _unusable(path)
    if why is not None:
        _fall_back(path, why)
        path = cache_root().joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
    _CHECKED.add(str(path))
    return path


def fallback_dirs(*parts: str) -> list[Path]:
    """Folders of an unusable (read-only) configured cache that may still hold entries for
    ``<parts...>``: read them after :func:`cache_dir`'s, never write them."""
    ro = _READ_ONLY.get(str(_configured()))
    if ro is None:
        return []
    path = ro.joinpath(*parts)
    return [path] if path.is_dir() else []


@contextlib.contextmanager
def lock(name: str, timeout: float = 900):
    """Hold the cache's file lock ``name`` (``<cache>/locks/<name>.lock``): one process at a
    time fills an entry, the others wait and then find it. A lock that cannot be taken (no
    locking on this file system, or held for more than ``timeout`` seconds) is not waited
    for: what it guards is written atomically either way, so it only costs duplicate work."""
    from filelock import FileLock, Timeout

    try:
        fl = FileLock(str(cache_dir("locks") / f"{name}.lock"), timeout=timeout)
        fl.acquire()
    except (OSError, Timeout):
        yield
        return
    try:
        yield
    finally:
        try:
            fl.release()
        except OSError:
            pass


def write_atomic(path: Path, data: bytes | Callable[[str], object]) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it renamed into place (readers
    see the old file or the whole new one): the one atomic writer (cache entries, precompiled
    headers, ``audit --blocklist``'s file). ``data`` is the bytes, or a function that writes
    the file named by the path it is given (libclang's ``TranslationUnit.save``).

    The file gets the mode a plain ``open(path, "w")`` gives a new file (0o666 less the umask,
    so others sharing the cache or reading the user's file can read it), not ``mkstemp``'s
    0o600. Raises ``OSError`` (and whatever ``data`` raises); no temporary file is left."""
    path = Path(path)
    fd, tmp = _create_beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            if not callable(data):
                fh.write(data)
        if callable(data):
            data(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _create_beside(path: Path) -> tuple[int, str]:
    """A new, empty, hidden file in ``path``'s folder, made as ``mkstemp`` makes one
    (``O_EXCL``, a random name) but with mode 0o666 for the umask to narrow: its descriptor
    (open for writing) and its path. Raises ``OSError``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = str(path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp"))
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def _sum_path(path: Path) -> Path:
    return path.with_name(path.name + ".sum")


def file_sha256(path) -> str:
    """SHA-256 (hex) of a file's bytes, read in blocks."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def seal(path: Path, key: str) -> None:
    """Record, beside the finished file ``path``, the key it answers and a SHA-256 of its bytes
    (``<path>.sum``), so that :func:`sealed` can tell it is whole. Raises ``OSError``."""
    path = Path(path)
    meta = {"key": key, "size": path.stat().st_size, "sha256": file_sha256(path)}
    write_atomic(_sum_path(path), json.dumps(meta).encode())
    SEALED[str(path), key] = _stamp(path)


#: Per process: files found whole by :func:`sealed`, by (path, key), with their (size, mtime,
#: inode) then.
SEALED: dict[tuple[str, str], tuple] = {}


def _stamp(path: Path) -> tuple:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


def sealed(path: Path, key: str) -> bool:
    """Whether ``path`` is a regular file whose bytes and key match its ``.sum`` (checked once
    per process while its size and mtime stay the same); a file without one, or altered, or
    written for another key, is not."""
    path = Path(path)
    try:
        stamp = _stamp(path)
        if SEALED.get((str(path), key)) == stamp:
            return True
        if not path.is_file():
            return False
        meta = json.loads(_sum_path(path).read_bytes())
        ok = (
            isinstance(meta, dict)
            and meta.get("key") == key
            and meta.get("size") == stamp[0]
            and meta.get("sha256") == file_sha256(path)
        )
    except (OSError, ValueError):
        return False
    if ok:
        SEALED[str(path), key] = stamp
    return ok


def discard(path: Path) -> None:
    """Remove a cache file and its ``.sum`` (what is already gone is fine)."""
    for p in (Path(path), _sum_path(Path(path))):
        with contextlib.suppress(OSError):
            p.unlink()
    for k in [k for k in SEALED if k[0] == str(path)]:
        del SEALED[k]


def result_key(*parts) -> str:
    """SHA-256 (hex, 32 digits) of ``parts`` as canonical JSON (``str`` for other values)."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


#: The package's own source folder, whose files :func:`code_fingerprint` reads.
PACKAGE = Path(__file__).resolve().parent.parent


@lru_cache(maxsize=None)
def code_fingerprint(*modules: str) -> str:
    """SHA-256 (16 hex digits) of some of this package's own source files (paths relative to
    the package, e.g. ``"engine/loop.py"``, ``"cpp/clang.py"``), so that a cached result is
    never reused after the code that computed it changed.

    Raises:
        ValueError: a name is not a file of the package (a typo such as ``"engine"`` would
            otherwise hash nothing, and results of changed code would be served).
    """
    if not modules:
        raise ValueError("code_fingerprint() needs the modules that compute the result")
    h = hashlib.sha256()
    for rel in modules:
        try:
            data = (PACKAGE / rel).read_bytes()
        except OSError as exc:
            raise ValueError(
                f"code_fingerprint: {rel!r} is not a file of the package ({exc.strerror or exc})"
            ) from None
        h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]


def key(kind: str, *, subject, target, code: tuple[str, ...]) -> str:
    """The one results-cache key: :func:`result_key` of what is computed (``kind``, with its
    format version when it has one), the subject's parts (its probe text or source digest,
    its flags), the target's parts (tree hash, libclang version, CUDA headers) and the
    :func:`code_fingerprint` of the modules ``code`` that compute it.

    The keys of results that code computes are made here (layouts, audits, diffs' structural
    views, candidate lists, the JIT's builders, preludes); the wheel caches
    (``wheel-digests``, ``wheel-roots``) are keyed by the wheel's path, size and mtime or
    its digest instead. A module named in ``code`` that does not exist raises ``ValueError``.
    """
    return result_key(kind, subject, target, code_fingerprint(*code))


def _loads(body: bytes):
    """``json.loads`` of a stored payload, by orjson (a whole install's cached audit is a large
    JSON document, which orjson reads several times faster than the standard library's decoder:
    docs/performance.md);
    what orjson refuses and the standard library reads (``NaN``) is read by the latter."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


class ResultCache:
    """JSON results of one kind (``layouts``, ``audit``, ...), keyed by :func:`result_key`.

    ``get`` returns the payload stored for a key, or ``None`` (missing, unreadable, written
    for another key, altered: the stored SHA-256 of the payload does not match, or refused
    by its ``load``). ``put`` never raises: a cache that cannot be written only costs time.

    An entry is one file: a line ``{"key": ..., "sha256": ...}``, then the payload's JSON,
    whose bytes the SHA-256 is of (checked without encoding the payload again).
    """

    def __init__(self, kind: str):
        self.kind = kind

    def entry_path(self, key: str) -> Path:
        return cache_dir("results", self.kind) / f"{key}.json"

    def get(self, key: str, load=None):
        """The payload stored for ``key``, or ``None``. ``load(payload)``, when given, turns it
        into what the caller uses, and raises (``KeyError``, ``TypeError``, ``ValueError``,
        ``AttributeError``, ``IndexError``) for a payload it cannot use: then it is a miss."""
        for folder in [self.entry_path(key).parent, *fallback_dirs("results", self.kind)]:
            payload = self.read_entry(folder / f"{key}.json", key)
            if payload is None:
                continue
            if load is None:
                return payload
            try:
                return load(payload)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError):
                continue
        return None

    @staticmethod
    def read_entry(path: Path, key: str):
        try:
            data = path.read_bytes()
            head, _, body = data.partition(b"\n")
            meta = json.loads(head)
            if (
                not isinstance(meta, dict)
                or meta.get("key") != key
                or meta.get("sha256") != hashlib.sha256(body).hexdigest()
            ):
                return None
            return _loads(body)
        except (OSError, ValueError):
            return None

    def put(self, key: str, payload) -> None:
        """Store the JSON ``payload`` under ``key`` (atomically); a cache that cannot be
        written, or a payload that is not JSON, stores nothing and raises nothing."""
        try:
            path = self.entry_path(key)
            body = json.dumps(payload, separators=(",", ":")).encode()
            head = json.dumps({"key": key, "sha256": hashlib.sha256(body).hexdigest()}).encode()
            write_atomic(path, head + b"\n" + body)
        except (OSError, TypeError, ValueError):
            return


@dataclass(frozen=True)
class Kind:
    """One kind of cached result, one row of :data:`KINDS`: its folder under the cache's
    ``results/`` (``name``), the format version its keys carry (bumped when the payload's
    shape changes) and the package modules whose code computes it (``code``; ``None`` for
    the wheel caches, keyed by a file's identity or digest instead of by code).

    Every cache entry of the package is read and written through a ``Kind``: :meth:`key`
    makes its key (through :func:`key`, so a module named that does not exist raises
    ``ValueError``), :meth:`memo` is the one get, else compute, then put.
    """

    name: str
    version: int
    code: tuple[str, ...] | None

    def key(self, *, subject, target, code: tuple[str, ...] = ()) -> str:
        """:func:`key` of ``subject`` and ``target`` for this kind: the row's code modules and
        ``code``, those a caller adds (the engine's own modules for a kind of layouts).

        Raises:
            ValueError: a kind keyed by file identity (``code`` None), or a module that is not
                a file of the package.
        """
        if self.code is None:
            raise ValueError(f"cache kind {self.name!r} is keyed by file identity, not by code")
        return key(f"{self.name}/{self.version}", subject=subject, target=target, code=self.code + tuple(code))

    def identity_key(self, *parts) -> str:
        """The key of a kind keyed by a file's identity or digest (``parts``), not by code."""
        return result_key(f"{self.name}/{self.version}", *parts)

    @property
    def store(self) -> ResultCache:
        return ResultCache(self.name)

    def get(self, k: str, load=None):
        """:meth:`ResultCache.get` of this kind's folder."""
        return self.store.get(k, load)

    def put(self, k: str, payload) -> None:
        """:meth:`ResultCache.put` of this kind's folder (never raises)."""
        self.store.put(k, payload)

    def memo(
        self,
        k: str,
        compute,
        *,
        load=None,
        dump=None,
        use_cache: bool = True,
        cached_only: bool = False,
        lock_name: str | None = None,
    ):
        """The value stored under ``k`` (``load(payload)``; a payload ``load`` refuses is a
        miss), else ``None`` with ``cached_only``, else ``compute()``, stored as ``dump(value)``
        (the value itself without ``dump``; nothing where that is ``None``) and returned.
        ``use_cache=False`` computes and stores again. ``lock_name``: compute under that cache :func:`lock`, looking again once
        it is held (another process may have stored the value meanwhile)."""
        hit = self.get(k, load) if use_cache else None
        if hit is not None or cached_only:
            return hit
        with lock(lock_name) if lock_name else contextlib.nullcontext():
            if lock_name and use_cache:
                hit = self.get(k, load)
                if hit is not None:
                    return hit
            value = compute()
            payload = value if dump is None else dump(value)
            if payload is not None:  # None: a value not to keep (a stored null reads as a miss)
                self.put(k, payload)
        return value


def kinds_by_name(*rows: Kind) -> dict[str, Kind]:
    out = {k.name: k for k in rows}
    if len(out) != len(rows):
        raise ValueError("two cache kinds share a folder name")
    return out


#: The code that writes the probe: the whole unit, and its parts.
_PROBE = (
    "subjects/probe.py",
    "subjects/aliases.py",
    "subjects/user_type.py",
    "subjects/builders.py",
    "subjects/budgets.py",
)


#: The stand-in headers of the MSVC x64 parse (``cutlass_layout.cpp.clang.msvc_flags``).
_MSVC_STUBS = (
    "stubs/msvc/stdint.h",
    "stubs/msvc/bits/stdint-intn.h",
    "stubs/msvc/bits/stdint-uintn.h",
    "stubs/msvc/cuda.h",
    "stubs/msvc/cl_msvc_prelude.h",
    "stubs/msvc/math.h",
    "stubs/msvc/malloc.h",
    "stubs/msvc/windows.h",
)


#: The code whose every change invalidates the cached layouts (the engine's,
#: ``cutlass_layout.engine.loop.ENGINE_SOURCES``), and everything laid out through it.
_ENGINE = (
    "engine/loop.py",
    "engine/numbers.py",
    *_PROBE,
    "subjects/config.py",
    "subjects/archs.py",
    "model/serde.py",
    "model/layout.py",
    "model/launch.py",
    "subjects/tma.py",
    "subjects/shapes.py",
    "cpp/clang.py",
    "subjects/mainloop2x.py",
    "cpp/cursors.py",
)


#: The code that finds, unpacks and identifies CUTLASS trees, flashinfer installs (with their
#: TVM FFI requirement) and CUTLASS's kernel library.
_TREES = (
    "sources/trees.py",
    "sources/digests.py",
    "sources/wheels.py",
    "sources/flashinfer.py",
    "sources/tvm_ffi.py",
    "sources/library.py",
)


#: The text-level readers of C++ (launchers cut down, and the readers beneath them).
_TEXT = ("cpp/text.py", "cpp/brackets.py", "cpp/arguments.py", "cpp/macros.py", "cpp/declarations.py", "cpp/rehost.py")


#: A real source's kernels found (installs/kernels.py) and laid out (its passes 0 and 2).
_KERNELS = ("installs/kernels.py", "installs/preludes.py", "installs/source_layout.py")


#: Every kind of cached result, by its folder name. The precompiled headers, unpacked wheels
#: and downloads are files, not results: :func:`seal` checks them.
KINDS = kinds_by_name(
    Kind("flashinfer-builders", 1, ("sources/flashinfer_jit.py",)),
    Kind("flashinfer-jit", 1, ("sources/_flashinfer_harness.py", "sources/flashinfer_jit.py")),
    Kind(
        "structural",
        3,
        (
            "commands/diff.py",
            "commands/diff_structural.py",
            "commands/scan.py",
            "model/serde.py",
            "model/scan.py",
            "model/diff.py",
            *_TREES,
            "cpp/treesitter.py",
            "cpp/treesitter_parse.py",
            "cpp/int_constants.py",
        ),
    ),
    Kind("wheel-installs", 1, _TREES),
    Kind("layouts", 2, _ENGINE),  # 2: tma_check
    Kind("library-kernels", 1, ("sources/_cutlass_library_harness.py", "installs/kernel_library.py")),
    Kind("library-layouts", 2, (*_ENGINE, "installs/kernel_library.py")),
    Kind(
        "candidates",
        3,
        (
            "installs/candidates.py",
            "installs/candidate_lists.py",
            "installs/moe_runners.py",
            *_TEXT,
            "cpp/preprocessor.py",
            "cpp/cursors.py",
            "cpp/interpret.py",
        ),
    ),
    Kind("dense-candidates", 1, ("installs/dense_runners.py", *_TEXT, "cpp/cursors.py", "cpp/interpret.py")),
    Kind(
        "moe_sm80",
        1,
        (
            "installs/moe_sm80.py",
            *_TEXT,
            "cpp/preprocessor.py",
            *_PROBE,
            "engine/loop.py",
            "engine/numbers.py",
            "cpp/clang.py",
        ),
    ),
    # pass 0's cut-down launcher macros, shared by sources calling the same ones
    Kind("preludes", 1, (*_KERNELS, *_TEXT, "cpp/cursors.py", *_PROBE)),
    # 2: launcher_macros; keys add the stand-in headers (commands/audit/plan.py STANDINS)
    Kind("audit", 3, (*_KERNELS, *_TEXT, *_ENGINE)),
    Kind("audit-canonicals", 1, ("installs/equivalence.py", "cpp/preprocessor.py", *_TEXT)),
    Kind("audit-scans", 1, ("commands/audit/plan.py", "commands/audit/judge.py", *_TEXT, *_KERNELS)),
    Kind(
        "audit-names",
        2,
        ("commands/audit/tactics.py", "installs/naming.py", *_KERNELS, "model/audit.py", "cpp/arguments.py"),
    ),
    Kind("fixes", 1, ("installs/fixes.py", *_KERNELS, *_TEXT, "model/audit.py", *_ENGINE)),
    # layout --tactic's Params: one tactic laid out again with its Params read (never an audit's:
    # an audit's layouts have none, and this kind holds only those read)
    # 2: {"linux", "msvc"}, Params on both host ABIs (the MSVC parse's stand-in headers too)
    Kind(
        "tactic-params",
        2,
        ("installs/fixes.py", "commands/audit/fixes.py", *_KERNELS, *_TEXT, *_ENGINE, *_MSVC_STUBS),
    ),
    Kind("wheel-digests", 1, None),  # per wheel path, size and mtime
    Kind("wheel-roots", 2, None),  # per wheel digest; 2: cutlass/cutlass.h marks a root too
)
