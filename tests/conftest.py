"""Shared fixtures: real CUTLASS trees from the package index; the session's own cache.

Tests never write outside a temporary cache: unless whoever runs them has set
``CUTLASS_LAYOUT_CACHE`` (then that folder is the cache they chose, and it is kept), the
session points it at a new temporary folder and removes it at the end. Wheels are fetched
with ``pip download`` (:func:`cutlass_layout.sources.wheels.fetch_wheel`); those already in the
user cache (``~/.cache/cutlass-layout/wheels``) are linked into the temporary one, read and
never written, so a session does not download them again.

With pytest-xdist (``-n auto``) that folder is made once, by the controller, before any
worker starts; every worker is handed the same folder (and inherits it in its environment),
so wheels are fetched, trees unpacked and precompiled headers built once per session, under
the cache's file locks (:func:`cutlass_layout.core.cache.lock`) when two workers need the same one
at once. Only the controller removes it, after the last worker is done. The temporary files
of the session (pytest's ``tmp_path`` folders, ``tempfile`` in tests and in the tool, nvcc's
and pip's scratch files, in this process and every one it starts) go to its ``tmp`` folder
(``TMPDIR``), and matplotlib's font cache too (``MPLCONFIGDIR``), so they go with it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

#: The session's folder ("cache", unless whoever runs the tests set CUTLASS_LAYOUT_CACHE),
#: whether this process made it ("owner": the controller), the TMPDIR and MPLCONFIGDIR it replaced.
_SESSION: dict = {}
#: The key of xdist's ``workerinput`` that hands a worker the controller's folders.
_WORKER_KEY = "cutlass_layout_session"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Point ``CUTLASS_LAYOUT_CACHE`` at a temporary folder for the whole session (worker
    processes and subprocesses inherit it), and ``TMPDIR`` at its ``tmp``, before any test
    runs (and before pytest makes its ``tmp_path`` folders)."""
    given = getattr(config, "workerinput", {}).get(_WORKER_KEY)
    if given:  # an xdist worker: the controller's folders, never ones of its own
        _SESSION.update(cache=Path(given["cache"]), owner=False)
        os.environ["CUTLASS_LAYOUT_CACHE"] = given["cache"]
        os.environ["TMPDIR"] = tempfile.tempdir = given["tmp"]
        return
    if os.environ.get("CUTLASS_LAYOUT_CACHE"):
        return
    tmp = Path(tempfile.mkdtemp(prefix="cutlass-layout-tests-"))
    # scratch files like /tmp's: hostile tests run commands as another user, who must reach
    # a folder made there; the session's folder itself others may only pass through
    scratch = tmp / "tmp"
    scratch.mkdir()
    os.chmod(scratch, 0o1777)
    os.chmod(tmp, 0o711)
    _SESSION.update(cache=tmp, owner=True, tmpdir=os.environ.get("TMPDIR"), mpl=os.environ.get("MPLCONFIGDIR"))
    os.environ["CUTLASS_LAYOUT_CACHE"] = str(tmp)
    os.environ["TMPDIR"] = tempfile.tempdir = str(scratch)
    if _SESSION["mpl"] is None:  # matplotlib's font cache, else written to ~/.cache/matplotlib
        os.environ["MPLCONFIGDIR"] = str(scratch / "matplotlib")
    import platformdirs

    user_wheels = Path(platformdirs.user_cache_dir("cutlass-layout")) / "wheels"
    if user_wheels.is_dir():
        for spec in user_wheels.iterdir():
            wheels = sorted(spec.glob("*.whl")) if spec.is_dir() else []
            if wheels:
                (tmp / "wheels" / spec.name).mkdir(parents=True, exist_ok=True)
                (tmp / "wheels" / spec.name / wheels[0].name).symlink_to(wheels[0])


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist's controller, before it starts each worker: hand it the session's folders."""
    if _SESSION.get("owner"):
        node.workerinput[_WORKER_KEY] = {"cache": str(_SESSION["cache"]), "tmp": tempfile.tempdir}


def pytest_unconfigure(config):
    """The process that made the session's folder (the controller) removes it, once, after
    the last test (and the last worker) is done."""
    if not _SESSION.get("owner"):
        return
    shutil.rmtree(_SESSION["cache"], ignore_errors=True)
    os.environ.pop("CUTLASS_LAYOUT_CACHE", None)
    tempfile.tempdir = None
    for name, before in (("TMPDIR", _SESSION["tmpdir"]), ("MPLCONFIGDIR", _SESSION["mpl"])):
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
    _SESSION.clear()


def pytest_collection_modifyitems(config, items):
    """Files with long tests first (``slow`` ones, then those that run nvcc), each file's
    tests together and in their order. With ``-n auto`` each file runs in one worker
    (``--dist loadfile``, pyproject.toml: its module fixtures are computed once), handed out
    in this order: the long files start at once, and the workers end together instead of
    one of them running the last long file alone."""

    def rank(item) -> int:
        if item.get_closest_marker("slow"):
            return 0
        if item.get_closest_marker("nvcc") or "nvcc" in getattr(item, "fixturenames", ()):
            return 1
        return 2

    first: dict = {}
    for item in items:
        first[item.path] = min(first.get(item.path, 2), rank(item))
    items.sort(key=lambda item: first[item.path])


from cutlass_layout import resolve_cutlass, target

FLASHINFER_0_7_2 = "flashinfer-python==0.7.2.post1"
FLASHINFER_0_6_8 = "flashinfer-python==0.6.8"
NVIDIA_CUTLASS_4_2 = "nvidia-cutlass==4.2.0.0"


#: The audits :func:`shared_audit` made in this worker.
_AUDITS: dict = {}


def shared_audit(spec: str, **kwargs):
    """``audit(spec, **kwargs)`` made once per session: the first worker to ask lays it out
    under the session cache's lock, the others wait for it and read the cache (a cold audit
    of a real install's family is the costliest step several test files share)."""
    from cutlass_layout import audit
    from cutlass_layout.core.cache import lock

    key = (spec, tuple(sorted(kwargs.items())))
    if key not in _AUDITS:
        with lock("tests-audit-" + "-".join(map(str, [spec, *sorted(kwargs.items())])).replace("/", "_")):
            _AUDITS[key] = audit(spec, **kwargs)
    return _AUDITS[key]


@pytest.fixture(scope="session")
def audit_072():
    """flashinfer-python 0.7.2.post1's MoE audit for sm120 (:func:`shared_audit`)."""
    return shared_audit(FLASHINFER_0_7_2, family="moe")


@pytest.fixture(scope="session")
def fi072():
    """Target (CUTLASS tree + CUDA headers) of flashinfer-python 0.7.2.post1 (CUTLASS "4.5.0")."""
    return target(resolve_cutlass(FLASHINFER_0_7_2))


@pytest.fixture(scope="session")
def fi068():
    """Target of flashinfer-python 0.6.8 (CUTLASS 4.4.2)."""
    return target(resolve_cutlass(FLASHINFER_0_6_8))


@pytest.fixture(scope="session")
def nc420():
    """Target of nvidia-cutlass 4.2.0.0 (CUTLASS 4.2.0)."""
    return target(resolve_cutlass(NVIDIA_CUTLASS_4_2))


@pytest.fixture(scope="session")
def nvcc():
    path = shutil.which("nvcc")
    if path is None:
        pytest.skip("nvcc is not on PATH: the nvcc cross-check needs it")
    return path


#: The miniature flashinfer install of ``fixtures/installs`` (stand-in headers written for the tests).
MINI = Path(__file__).resolve().parent.parent / "fixtures" / "installs" / "mini_flashinfer"
#: The miniature stand-in of CUTLASS's cutlass_library package (written for the tests).
MINI_LIBRARY = MINI.parent / "mini_cutlass_library"


def _copied(src: Path, tmp_path: Path, monkeypatch) -> Path:
    """A copy of ``src`` as ``tmp_path/site-packages``, and a private cache."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    dest = tmp_path / "site-packages"
    shutil.copytree(src, dest)
    return dest


@pytest.fixture(scope="session")
def _shared_mini(tmp_path_factory) -> tuple[Path, Path]:
    """One read-only copy of the miniature install per worker, and its cache: what the tests
    marked ``mini_shared`` audit (the first lays it out, the others read the cache)."""
    root = tmp_path_factory.mktemp("shared-mini")
    dest = root / "site-packages"
    shutil.copytree(MINI, dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)  # the tool writes nothing into an install
    return dest, root / "cache"


@pytest.fixture
def mini(request, tmp_path, monkeypatch):
    """A copy of the miniature install, and a private cache: a cold audit of its own.

    A test marked ``mini_shared`` (one that reads an audit of the unchanged install and is
    not about a cold run or the cache) gets the worker's shared copy and cache instead."""
    if request.node.get_closest_marker("mini_shared") is None:
        return _copied(MINI, tmp_path, monkeypatch)
    dest, cache = request.getfixturevalue("_shared_mini")
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(cache))
    return dest


@pytest.fixture
def mini_library(tmp_path, monkeypatch):
    """A copy of the miniature cutlass_library (as a site-packages), and a private cache."""
    return _copied(MINI_LIBRARY, tmp_path, monkeypatch)


@pytest.fixture
def only_sources(monkeypatch):
    """``only_sources(keep)``: an audit in this test parses only the generated sources whose
    file name ``keep`` accepts (the install's builders still run; their other sources are
    dropped from every module). Returns the patched ``jit_modules``, to read those modules."""
    from cutlass_layout.sources import flashinfer_jit

    real = flashinfer_jit.jit_modules

    def patch(keep):
        def some(*args, **kwargs):
            builds = real(*args, **kwargs)
            for m in builds.modules:
                m.generated = [p for p in m.generated if keep(p.name)]
            return builds

        monkeypatch.setattr(flashinfer_jit, "jit_modules", some)
        return some

    return patch
