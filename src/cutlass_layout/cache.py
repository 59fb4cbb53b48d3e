"""The user cache directory, and the one results cache every command reads and writes.

Nothing is ever written into a user's CUTLASS tree or site-packages; everything that is
derived (unpacked wheels, downloaded wheels, precompiled headers, results) goes below
:func:`cache_dir`.

:class:`ResultCache` stores JSON results under ``<cache>/results/<kind>/``, one file per
key. A key is :func:`result_key` of everything that determines the result (tree hash, the
config's probe text or the generated file, clang flags, libclang version, and
:func:`code_fingerprint` of the code that computes it). Writes are atomic (a temporary file
renamed into place); every entry carries its key and a SHA-256 of its payload, and an entry
whose key or checksum does not match is a miss, never a result.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import platformdirs


def cache_dir(*parts: str) -> Path:
    """Return (and create) ``<user cache dir>/cutlass-layout/<parts...>``.

    ``CUTLASS_LAYOUT_CACHE`` overrides the base directory (tests use it).
    """
    base = os.environ.get("CUTLASS_LAYOUT_CACHE")
    root = Path(base) if base else Path(platformdirs.user_cache_dir("cutlass-layout"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def result_key(*parts) -> str:
    """SHA-256 (hex, 32 digits) of ``parts`` as canonical JSON (``str`` for other values)."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@lru_cache(maxsize=None)
def code_fingerprint(*modules: str) -> str:
    """SHA-256 (16 hex digits) of some of this package's own source files (paths relative to
    the package, e.g. ``"engine.py"``, ``"frontends/clang.py"``), so that a cached result is
    never reused after the code that computed it changed."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for rel in modules:
        h.update(rel.encode() + b"\0")
        try:
            h.update((here / rel).read_bytes())
        except OSError:
            pass
    return h.hexdigest()[:16]


class ResultCache:
    """JSON results of one kind (``layouts``, ``audit``, ...), keyed by :func:`result_key`.

    ``get`` returns the payload stored for a key, or ``None`` (missing, unreadable, written
    for another key, or altered: the stored SHA-256 of the payload does not match). ``put``
    never raises: a cache that cannot be written only costs time.

    An entry is one file: a line ``{"key": ..., "sha256": ...}``, then the payload's JSON,
    whose bytes the SHA-256 is of (checked without encoding the payload again).
    """

    def __init__(self, kind: str):
        self.kind = kind

    def _path(self, key: str) -> Path:
        return cache_dir("results", self.kind) / f"{key}.json"

    def get(self, key: str):
        try:
            data = self._path(key).read_bytes()
            head, _, body = data.partition(b"\n")
            meta = json.loads(head)
            if (not isinstance(meta, dict) or meta.get("key") != key
                    or meta.get("sha256") != hashlib.sha256(body).hexdigest()):
                return None
            return json.loads(body)
        except (OSError, ValueError):
            return None

    def put(self, key: str, payload) -> None:
        try:
            path = self._path(key)
            body = json.dumps(payload, separators=(",", ":")).encode()
            head = json.dumps({"key": key, "sha256": hashlib.sha256(body).hexdigest()}).encode()
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        except (OSError, TypeError, ValueError):
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(head + b"\n" + body)
            os.replace(tmp, path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
