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
    cfg = Config()  # handed.md A: 4 stages, 84992 B on both trees
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
    assert (back.stages, back.mainloop.size, back.epilogue.size, back.kernel.size) == \
        (stages, mainloop, epilogue, kernel)


@pytest.mark.network
def test_keys(fi072, tmp_path):
    """A kernel-body check is cached apart from the types-only layout (one key per config
    and check, the builder's budget inside it); a user's own type is not cached at all (its
    header's includes are not tracked)."""
    tgt = target(fi072.tree)
    cfg = Config()
    keys = {report_key(tgt, cfg), report_key(tgt, cfg, checked="kernel"),
            report_key(tgt, cfg.with_(preset="trtllm-moe"))}
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
    path = cache._path(key)
    path.write_bytes(path.read_bytes().replace(b"84992", b"84993"))
    assert cache.get(key) is None  # altered
    other = result_key("another tree")
    path.rename(cache._path(other))
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

    from cutlass_layout.installs import kernels
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
        return (engine.report_key(tgt, cfg),
                cache.key("audit", subject=[], target=[], code=audit._CODE + audit.STANDINS),
                kernels._prelude_key(source, "LAUNCH(a, b);\n", pch, "cap"))

    before = keys()
    monkeypatch.setattr(cache, "PACKAGE", copy)
    assert keys() == before  # the same bytes, the same keys
    modules = set(engine.ENGINE_SOURCES) | set(audit._CODE) | {"cpp/text.py"}
    for rel in sorted(modules):
        path = copy / rel
        original = path.read_bytes()
        path.write_bytes(original + b"#")
        changed = keys()
        path.write_bytes(original)
        watched = [rel in engine.ENGINE_SOURCES, True, rel in ("installs/kernels.py", "cpp/text.py",
                                                                     "subjects/probe.py")]
        for was, now, watches in zip(before, changed, watched):
            assert (was != now) == watches, rel
    cache.code_fingerprint.cache_clear()


def test_a_member_read_back_is_the_member():
    """A cached member (``FieldLayout.from_dict``, built without the constructor) equals
    the one written, with its defaults filled in; a key it does not have, or a required one
    missing, is refused as the constructor refuses it (``TypeError``: a cache miss)."""
    from cutlass_layout.model import FieldLayout, StructLayout, plain

    inner = FieldLayout("smem_A", "cute::ArrayEngine<...>", 1024, 32768, 128, declared_alignas=128,
                        padding_before=1024, file="cute/container/array_aligned.hpp", line=12)
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
