"""How the engine batches configs into translation units (libclang parses counted)."""

from __future__ import annotations

import pytest
from handed import SECTION_A

from cutlass_layout import Config
from cutlass_layout.engine import loop as engine
from cutlass_layout.subjects import probe

pytestmark = pytest.mark.network


def _count_parses(monkeypatch) -> list:
    calls = []
    real = engine.parse_probe

    def counted(tgt, configs, arch, *args):
        calls.append(list(configs))
        return real(tgt, configs, arch, *args)

    monkeypatch.setattr(engine, "parse_probe", counted)
    return calls


def test_shared_failing_mainloop_is_found_alone(fi072, monkeypatch):
    """tests/handed.md A: grouped NVFP4 128x256x256 does not compile (the builder's stage count is
    below 2). Its flashinfer and trtllm-moe configs instantiate the same failing mainloop
    type; clang reports the static_assert once, for the first, and the second gets only
    follow-up errors (no type named ... in that class). The first gets the static_assert from
    that parse; the second, kin to it (an earlier failure of its kin may have hidden its own
    first error), is parsed alone; the config that compiles is parsed once more, alone."""
    calls = _count_parses(monkeypatch)
    bad = Config(kernel="grouped", a="nvfp4", tile=(128, 256, 256))
    good = Config(kernel="grouped", a="nvfp4", tile=(128, 128, 128))
    reps = engine.layouts([bad, bad.with_(preset="trtllm-moe"), good], fi072, use_cache=False)
    assert [len(c) for c in calls] == [3, 1, 1] and calls[1] == [bad.with_(preset="trtllm-moe")]
    assert calls[2] == [good]
    for r in reps[:2]:
        assert r.error.kind == "static_assert"
        assert "Stages set to value 2 or more" in r.error.message
        assert r.error.file.endswith("sm120_blockscaled_mma_array_tma.hpp")
        assert r.kernel is None and r.stages is None
    stages, mainloop, epilogue, kernel, _ = SECTION_A[((128, 128, 128), "flashinfer")]
    r = reps[2]
    assert r.error is None
    assert (r.stages, r.mainloop.size, r.epilogue.size, r.kernel.size) == (stages, mainloop, epilogue, kernel)


def test_precompiled_header_warm_up_config_lays_out(fi072):
    """The precompiled header holds the family's default config already instantiated
    (probe.pch_preambles); laying out that very config reads the same numbers."""
    full, first, plain = probe.pch_preambles("sm120")
    assert full.count(f"namespace {probe.WARM_NAMESPACE}") == 2 * len(probe.WARM_UP["sm120"]) == 8
    assert first.count(f"namespace {probe.WARM_NAMESPACE}") == 2 and probe.WARM_NAMESPACE not in plain
    r = engine.layout(Config(), fi072)
    stages, mainloop, epilogue, kernel, _ = SECTION_A[((128, 128, 128), "flashinfer")]
    assert (r.stages, r.mainloop.size, r.epilogue.size, r.kernel.size) == (stages, mainloop, epilogue, kernel)
    tma = r.tma_transaction_bytes  # tests/handed.md A: A tile 8192 B + SFA 1024 B; B likewise
    assert (tma.mk.value, tma.nk.value, tma.total.value) == (9216, 9216, 18432)
    assert tma.mk.file == "cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp"
    assert (r.capacity.value, r.capacity.file) == (101376, "cutlass/arch/arch.h")


def test_errors_in_a_batch_are_the_errors_alone(fi072, monkeypatch):
    """MXFP8 grouped with K = 64 does not compile on flashinfer 0.7.2.post1 (a hard error in
    cute/layout.hpp, not a static_assert), whatever M and N. In a batch, clang reports a
    shared failed instantiation once, so some of these look clean at first, and the others'
    first errors may not be their own; the engine parses each of the three after the first
    apart (all of one kin: a unit each), then the config that compiles, and gives every
    config the error it gets alone."""
    tiles = [(128, 128, 64), (256, 128, 64), (128, 256, 64), (256, 256, 64)]
    bad = [Config(kernel="grouped", a="mxfp8", tile=t) for t in tiles]
    good = Config(kernel="grouped", a="mxfp8", tile=(128, 64, 128))
    calls = _count_parses(monkeypatch)
    reps = engine.layouts(bad + [good], fi072, use_cache=False)
    assert [len(c) for c in calls] == [5, 1, 1, 1, 1] and calls[-1] == [good]
    assert reps[4].error is None
    for cfg, r in zip(bad, reps):
        alone = engine.layouts([cfg], fi072, use_cache=False)[0].error
        assert r.kernel is None and r.error.kind == "error"
        assert (r.error.message, r.error.file, r.error.line) == (alone.message, alone.file, alone.line)
        assert r.error.file == "cute/layout.hpp"


def test_precompiled_header_falls_back_and_remembers_a_bad_preamble(fi072, tmp_path, monkeypatch):
    """ensure_pch builds the first preamble that parses cleanly; one with errors (a tree
    where the warm-up config does not compile) is marked and not built again."""
    from cutlass_layout.cpp import clang as fc

    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path))
    builds = []
    real = fc.build_pch
    monkeypatch.setattr(fc, "build_pch", lambda text, *a: builds.append(text) or real(text, *a))
    broken, fine = 'struct A { int x; };\nstatic_assert(sizeof(A) == 5, "no");\n', "struct A { int x; };\n"
    flags = fi072.flags("sm120")
    first = fc.ensure_pch([broken, fine], flags, "k")
    assert first is not None and first.is_file() and builds == [broken, fine]
    assert len(list((tmp_path / "pch").glob("*.bad"))) == 1
    assert fc.ensure_pch([broken, fine], flags, "k") == first and len(builds) == 2
    assert fc.ensure_pch([broken], flags, "k") is None and len(builds) == 2
