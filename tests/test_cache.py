"""One results cache: a config laid out by one command is not parsed again by another.

Parses are counted as ``ProbeUnit`` constructions (written to a file, so that forked
workers count too), in a temporary cache without precompiled headers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from handed import SECTION_A

from cutlass_layout import Config, UserType
from cutlass_layout.commands.diff import diff
from cutlass_layout.commands.sweep import sweep
from cutlass_layout.cpp.clang import ProbeUnit
from cutlass_layout.model import LayoutReport
from cutlass_layout.engine.loop import cached, layout, layouts, report_key, target


@pytest.fixture()
def parses(tmp_path, monkeypatch):
    """A private cache dir; returns a function giving the number of parses so far."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CUTLASS_LAYOUT_NO_PCH", "1")  # no header to build in the temporary cache
    log = tmp_path / "parses.log"
    real = ProbeUnit.__init__

    def counted(self, *args, **kwargs):
        with open(log, "a") as fh:
            fh.write("parse\n")
        real(self, *args, **kwargs)

    monkeypatch.setattr(ProbeUnit, "__init__", counted)
    return lambda: len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.network
def test_a_config_the_sweep_cached_is_not_parsed_by_diff(fi068, fi072, parses):
    cfg = Config()  # tests/handed.md A: 4 stages, 84992 B on both trees
    for tree in (fi068.tree, fi072.tree):
        (rec,) = sweep([cfg], target(tree), jobs=1).records
        assert (rec.stages, rec.kernel_bytes) == (4, 84992)
    swept = parses()
    assert swept >= 2  # at least one translation unit per tree
    res = diff(fi068.tree, fi072.tree, [cfg], structural=False)
    assert parses() == swept  # every layout came from the sweep's entries
    (row,) = res.numeric
    assert row.old.kernel_bytes == row.new.kernel_bytes == 84992 and row.changed == []
    # and a sweep again, or a layout of the same config (default flags: with the builder's
    # budget, which the sweep's parse read too), parses nothing either
    sweep([cfg], target(fi072.tree), jobs=1)
    rep = layout(cfg, target(fi072.tree))
    assert rep.kernel.size == 84992 and rep.builder_budget.stages == 4
    assert parses() == swept
    # use_cache=False parses again (and stores what it found)
    again = layouts([cfg], target(fi072.tree), use_cache=False)[0]
    assert parses() == swept + 1 and again.kernel.size == 84992


@pytest.mark.network
def test_cached_report_is_the_report(fi072, parses):
    """A report read back from the cache is the one computed (to_dict/from_dict), with the
    provenance of the tree as named now."""
    cfg = Config(tile=(128, 256, 128), preset="trtllm-moe")
    fresh = layouts([cfg], target(fi072.tree))[0]
    n = parses()
    (back,) = cached([cfg], target(fi072.tree))
    assert parses() == n
    assert back == fresh and back.to_dict() == fresh.to_dict()
    assert LayoutReport.from_dict(fresh.to_dict()) == fresh
    stages, mainloop, epilogue, kernel, _ = SECTION_A[((128, 256, 128), "trtllm-moe")]
    assert (back.stages, back.mainloop.size, back.epilogue.size, back.kernel.size) == (
        stages,
        mainloop,
        epilogue,
        kernel,
    )


@pytest.mark.network
def test_keys(fi072, tmp_path):
    """A kernel-body check is cached apart from the types-only layout (one key per config
    and check, the builder's budget inside it); a user's own type is not cached at all (its
    header's includes are not tracked)."""
    tgt = target(fi072.tree)
    cfg = Config()
    keys = {
        report_key(tgt, cfg),
        report_key(tgt, cfg, checked="kernel"),
        report_key(tgt, cfg.with_(preset="trtllm-moe")),
    }
    assert len(keys) == 3 and None not in keys
    header = tmp_path / "k.hpp"
    header.write_text("struct K {};\n")
    assert report_key(tgt, UserType(header, "K", "sm120")) is None


def test_result_cache_entries(tmp_path, monkeypatch):
    """Atomic, keyed, checksummed: an altered or misplaced entry is a miss, never a result."""
    from cutlass_layout.core.cache import ResultCache, result_key

    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path))
    cache, key = ResultCache("test"), result_key("tree", {"tile": [128, 128, 128]})
    assert cache.get(key) is None
    cache.put(key, {"size": 84992, "fields": [1, None, "é"]})
    assert cache.get(key) == {"size": 84992, "fields": [1, None, "é"]}
    path = cache.entry_path(key)
    path.write_bytes(path.read_bytes().replace(b"84992", b"84993"))
    assert cache.get(key) is None  # altered
    other = result_key("another tree")
    path.rename(cache.entry_path(other))
    assert cache.get(other) is None  # written for another key
    assert not list(path.parent.glob("*.tmp"))


def test_the_session_cache_is_not_the_user_cache(tmp_path):
    """tests/conftest.py: a session without CUTLASS_LAYOUT_CACHE gets a temporary one; tests
    never write into ~/.cache/cutlass-layout."""
    import os
    import tempfile

    import conftest
    import platformdirs

    from cutlass_layout.core.cache import cache_dir

    if not conftest._SESSION:
        pytest.skip("CUTLASS_LAYOUT_CACHE was set by whoever runs the tests: their cache")
    session = conftest._SESSION["cache"]  # under xdist: the controller's, in every worker
    assert os.environ["CUTLASS_LAYOUT_CACHE"] == str(session)
    # temporary files (tmp_path's too) go with the session's folder
    assert Path(tempfile.gettempdir()).is_relative_to(session) and tmp_path.is_relative_to(session)
    assert Path(os.environ["TMPDIR"]).is_relative_to(session)
    assert cache_dir() != Path(platformdirs.user_cache_dir("cutlass-layout"))


def test_code_fingerprint_refuses_a_module_that_does_not_exist():
    """A name without ``.py`` once hashed nothing (a cut-down launcher cached by old code was
    served after the code changed): naming a file the package lacks is an error."""
    from cutlass_layout.core.cache import code_fingerprint, key

    with pytest.raises(ValueError, match="'kernels' is not a file"):
        code_fingerprint("kernels", "launchers", "probe")
    with pytest.raises(ValueError):
        key("x", subject=[], target=[], code=("engine/loop.py", "frontends/nope.py"))
    with pytest.raises(ValueError, match="'kernels.py' is not a file"):  # it lives in installs/
        code_fingerprint("kernels.py")
    assert code_fingerprint("installs/kernels.py") != code_fingerprint("cpp/text.py")


@pytest.mark.network
def test_every_fingerprinted_module_changes_the_key(fi072, tmp_path, monkeypatch):
    """In a temporary copy of the package, a one-byte change of any module the engine, the
    audit or the shared prelude fingerprints gives another key; the untouched copy gives
    today's keys."""
    import importlib
    import shutil

    from cutlass_layout.installs import preludes
    from cutlass_layout.installs.kernels import Source
    from cutlass_layout.core import cache
    from cutlass_layout.engine import loop as engine

    audit = importlib.import_module("cutlass_layout.commands.audit.plan")

    copy = tmp_path / "pkg"
    shutil.copytree(cache.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    tgt, cfg = target(fi072.tree), Config()
    source = Source(tmp_path / "k.cu", ("-x", "cuda"), fi072.tree.include_root, "sm120")
    pch = tmp_path / "0123.pch"

    def keys():
        cache.code_fingerprint.cache_clear()
        return (
            engine.report_key(tgt, cfg),
            audit.AUDIT.key(subject=[], target=[], code=audit.STANDINS),
            preludes.prelude_key(source, "LAUNCH(a, b);\n", pch, "cap"),
        )

    before = keys()
    monkeypatch.setattr(cache, "PACKAGE", copy)
    assert keys() == before  # the same bytes, the same keys
    prelude_code = cache.KINDS["preludes"].code
    modules = set(engine.ENGINE_SOURCES) | set(audit.AUDIT.code) | set(prelude_code)
    for rel in sorted(modules):
        path = copy / rel
        original = path.read_bytes()
        path.write_bytes(original + b"#")
        changed = keys()
        path.write_bytes(original)
        watched = [rel in engine.ENGINE_SOURCES, True, rel in prelude_code]
        for was, now, watches in zip(before, changed, watched):
            assert (was != now) == watches, rel
    cache.code_fingerprint.cache_clear()


def test_a_member_read_back_is_the_member():
    """A cached member (``FieldLayout.from_dict``, built without the constructor) equals
    the one written, with its defaults filled in; a key it does not have, or a required one
    missing, is refused as the constructor refuses it (``TypeError``: a cache miss)."""
    from cutlass_layout.model import FieldLayout, StructLayout, plain

    inner = FieldLayout(
        "smem_A",
        "cute::ArrayEngine<...>",
        1024,
        32768,
        128,
        declared_alignas=128,
        padding_before=1024,
        file="cute/container/array_aligned.hpp",
        line=12,
    )
    outer = FieldLayout("mainloop", "SharedStorage", 0, 33792, 1024, fields=[inner], tail_padding=0)
    s = StructLayout("S", 33792, 1024, 0, [outer])
    back = StructLayout.from_dict(plain(s))
    assert back == s and back.fields[0].fields[0].declared_alignas == 128
    bare = FieldLayout.from_dict({"name": "x", "type": "int", "offset": 0, "size": 4, "type_align": 4})
    assert bare == FieldLayout("x", "int", 0, 4, 4) and bare.fields == [] and bare.access == "public"
    with pytest.raises(TypeError):
        FieldLayout.from_dict({**plain(inner), "colour": "red"})
    with pytest.raises(TypeError):
        FieldLayout.from_dict({"name": "x", "type": "int", "offset": 0, "size": 4})


def test_every_cache_kind_names_modules_that_exist():
    """Each row of the kinds table makes a key: every module it names is a file of the package
    (a renamed module would otherwise fail at the first cache read), and the wheel caches,
    keyed by file identity, refuse a code key."""
    from cutlass_layout.core.cache import KINDS

    for kind in KINDS.values():
        if kind.code is None:
            with pytest.raises(ValueError):
                kind.key(subject=[], target=[])
            assert len(kind.identity_key("x")) == 32
        else:
            assert len(kind.key(subject=["s"], target=["t"])) == 32
    with pytest.raises(ValueError, match="not a file of the package"):
        KINDS["structural"].key(subject=[], target=[], code=("no/such_module.py",))


def test_memo_is_get_else_compute_then_put():
    """One memo for every cache entry: a hit is loaded and nothing computed; a payload the
    loader refuses is a miss; ``cached_only`` computes nothing; ``use_cache=False`` computes
    and stores again; ``dump`` is what is stored, the value what is returned."""
    from cutlass_layout.core.cache import Kind

    kind = Kind("test-memo", 1, ("core/cache.py",))
    k = kind.key(subject=["a"], target=[])
    calls = []

    def compute():
        calls.append(1)
        return {"n": len(calls)}

    assert kind.memo(k, compute, cached_only=True) is None and not calls
    assert kind.memo(k, compute) == {"n": 1}
    assert kind.memo(k, compute) == {"n": 1} and len(calls) == 1  # a hit
    assert kind.memo(k, compute, use_cache=False) == {"n": 2}  # computed and stored again
    assert kind.get(k) == {"n": 2}

    def refuse(d):
        raise KeyError("old shape")

    assert kind.memo(k, compute, load=refuse, lock_name="test-memo") == {"n": 3}  # a refused hit: a miss
    assert kind.memo(k, lambda: (7, 8), dump=list, use_cache=False) == (7, 8)
    assert kind.get(k) == [7, 8]
    assert kind.memo(k, lambda: 9, dump=lambda v: None, use_cache=False) == 9  # dump None: not kept
    assert kind.get(k) == [7, 8]


def test_every_cache_entry_goes_through_the_kinds_table():
    """``ResultCache`` is made only in ``core/cache.py`` (every other module reads and writes
    through a row of ``KINDS``), no module outside it calls ``key`` or ``code_fingerprint`` by
    hand but for the precompiled header's key, and every kind has a folder of its own."""
    import ast

    from cutlass_layout.core import cache
    from cutlass_layout.core.cache import KINDS, Kind

    made, keyed = [], []
    for path in sorted(cache.PACKAGE.rglob("*.py")):
        rel = path.relative_to(cache.PACKAGE).as_posix()
        if rel == "core/cache.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name == "ResultCache":
                    made.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("core.cache"):
                keyed += [
                    f"{rel}:{node.lineno} {a.name}"
                    for a in node.names
                    if a.name in ("key", "ResultCache", "code_fingerprint")
                ]
    assert made == []
    assert [k.split()[1] for k in keyed] == ["code_fingerprint"] and keyed[0].startswith("commands/audit/plan.py")
    assert all(name == kind.name for name, kind in KINDS.items())
    names = [kind.name for kind in KINDS.values()]
    assert len(set(names)) == len(names) and {"layouts", "audit", "fixes", "preludes", "candidates"} <= set(names)
    with pytest.raises(ValueError, match="share a folder"):
        cache.kinds_by_name(Kind("a", 1, None), Kind("a", 2, None))


def test_write_atomic_gives_the_mode_open_gives(tmp_path):
    """The one atomic writer (cache entries, precompiled headers, ``--blocklist``): bytes, or a
    function that writes the temporary path it is given (libclang's ``TranslationUnit.save``);
    the file gets 0o666 less the umask, as ``open(path, "w")`` gives, and a failed write
    leaves neither the file nor a temporary one."""
    import os
    import stat

    from cutlass_layout.core.cache import write_atomic

    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a", b"bytes")
        write_atomic(tmp_path / "b", lambda tmp: Path(tmp).write_bytes(b"saved"))
        with open(tmp_path / "plain", "w"):
            pass

        def fails(tmp):
            raise OSError("disk full")

        with pytest.raises(OSError, match="disk full"):
            write_atomic(tmp_path / "c", fails)
    finally:
        os.umask(old)
    assert (tmp_path / "a").read_bytes() == b"bytes" and (tmp_path / "b").read_bytes() == b"saved"
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {"a": 0o640, "b": 0o640, "plain": 0o640}


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "headers"


def test_stale_precompiled_header_is_rebuilt(tmp_path, monkeypatch):
    """clang refuses a precompiled header when a file it was built from is newer (a
    reinstalled venv, a re-unpacked tree with the same content and so the same key): the
    engine rebuilds it instead of failing ("Error parsing translation unit"). On a copy of
    the small tree of fixtures/headers/cluster_tree (a real CUTLASS tree costs two header
    builds of about 20 s each): its ``clusters::One``'s SharedStorage is the mainloop's
    ``char smem[4096]`` then the epilogue's ``char smem[1024]``, 5120 B."""
    import os
    import shutil
    import time

    from cutlass_layout.engine import loop

    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    inc = tmp_path / "include"
    shutil.copytree(FIXTURES / "cluster_tree" / "include", inc)
    tgt = target(str(inc))
    discarded = []
    real = loop.discard
    monkeypatch.setattr(loop, "discard", lambda pch: (discarded.append(pch), real(pch))[1])
    kernel = UserType(FIXTURES / "cluster_kernels.hpp", "clusters::One", "sm90")
    first = layout(kernel, tgt, use_cache=False)
    assert tgt.pch and not discarded
    later = time.time() + 100
    for header in inc.rglob("*.h"):  # the whole tree re-unpacked: same bytes, newer files
        os.utime(header, (later, later))
    again = layout(kernel, tgt, use_cache=False)
    assert first.kernel.size == again.kernel.size == 5120
    assert len(discarded) == 1  # the stale header, rebuilt once
