"""--header/--type on kernels that are not GEMMs: an FMHA kernel's SharedStorage is laid out and
named as the FMHA's own, never as an epilogue alone or a GEMM's mainloop + epilogue.

The fixture (``fixtures/headers/fmha_kernel.hpp``) builds an attention kernel's storage from
CUTLASS types in the shape of CUTLASS example 77's ``Sm100FmhaFwdKernelTmaWarpspecialized``
(and flashinfer's copy): f16, tile 256 x 128 x 128 (Q, K/V, head dim), 3 K/V stages. By hand:

* Q tile: 128 rows (each of the two softmax warp groups' half of 256) x 128 x 2 buffers x 2 B =
  65536 B; K and V (a union): 128 x 128 x 3 stages x 2 B = 98304 B; mainloop 163840 B; O tile
  128 x 128 x 2 x 2 B = 65536 B;
* pipelines, each ``alignas(16)``, 8 B per barrier, full and empty per stage: Q (2 stages) 32,
  K/V (3) 48, S0, S1 (1) 16 each, s0/s1 correction (1) 16 each, O (2) 32, epilogue (2) 32,
  softmax order (1 stage x 2 groups) 16: 224 B;
* ``Forward``: mainloop and epilogue in an anonymous union (163840) @0, pipelines @163840,
  ``barrier_o`` (8) @164064, ``tmem_base_ptr`` (4) @164072, size 164076 rounded to the
  alignment 16 = 164080;
* ``Persistent``: the two side by side, ``mainloop_epilogue`` 229376 @0, pipelines @229376,
  ``tmem_base_ptr`` @229600, size 229616 (CUTLASS example 77's own persistent kernel for
  this tile, read from nvidia-cutlass 4.2.0.0's ``examples/77_blackwell_fmha``, lays out to
  the same 229616 B);
* ``RowReduce``: ``float[8][32]`` 1024 B, a ``ClusterBarrier`` @1024: 1032 B, no attention tiles.

nvcc checks every size and offset (one build).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutlass_layout import UserType, layouts
from cutlass_layout.checks.verify import verify_with_nvcc
from cutlass_layout.cli import main
from cutlass_layout.reports import layout as layout_report

HEADER = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "fmha_kernel.hpp"

pytestmark = pytest.mark.network


def _top(s):
    return [(f.name, f.offset, f.size) for f in s.fields]


def test_fmha_storage_is_named_and_matches_nvcc(nc420, nvcc, capsys):
    subjects = [UserType(HEADER, f"attention::{n}", "sm100") for n in ("Forward", "Persistent", "RowReduce")]
    fwd, persistent, reduce = reps = layouts(subjects, nc420)
    for r in reps:
        assert r.error is None, r.error
        # no part is called a kernel, mainloop or epilogue: the storage is laid out as it is
        assert r.kernel is None and r.mainloop is None and r.epilogue is None
        assert r.stages is None and r.launch is None
        assert r.capacity.value == 232448
    assert [r.subject_kind for r in reps] == ["fmha", "fmha", "storage"]
    assert fwd.storage.size == 164080 and fwd.smem_bytes == 164080
    assert _top(fwd.storage) == [
        ("<anonymous>", 0, 163840),
        ("pipelines", 163840, 224),
        ("barrier_o", 164064, 8),
        ("tmem_base_ptr", 164072, 4),
    ]
    assert fwd.storage.find("<anonymous>.mainloop.smem_q").size == 65536
    assert fwd.storage.find("<anonymous>.epilogue.smem_o").offset == 0
    assert persistent.storage.size == 229616
    assert _top(persistent.storage) == [
        ("mainloop_epilogue", 0, 229376),
        ("pipelines", 229376, 224),
        ("tmem_base_ptr", 229600, 4),
    ]
    assert persistent.storage.find("mainloop_epilogue.epilogue").offset == 163840
    assert [(f.name, f.offset, f.size) for f in persistent.storage.fields[1].fields][:3] == [
        ("load_q", 229376, 32),
        ("load_kv", 229408, 48),
        ("mma_s0", 229456, 16),
    ]
    assert reduce.storage.size == 1032

    layout_report.render(fwd)
    out = capsys.readouterr().out
    assert (
        "SharedStorage of attention::Forward: an FMHA (fused multi-head attention) kernel's own "
        "SharedStorage, not a GEMM's mainloop + epilogue (Q, K/V tiles: mainloop.smem_q, "
        "mainloop.smem_k, mainloop.smem_v)"
    ) in out
    assert "SharedStorage of attention::Forward 164080 B of 232448 B" in out
    assert "alone" not in out and "Stages:" not in out and "SharedStorage sizes" not in out
    layout_report.render(reduce)
    out = capsys.readouterr().out
    assert "SharedStorage of attention::RowReduce: a SharedStorage of no CUTLASS GEMM shape" in out
    assert "FMHA" not in out
    md = layout_report.to_markdown(persistent)
    assert "an FMHA (fused multi-head attention) kernel's own SharedStorage" in md
    assert "| 229376 | 224 |  | `pipelines` |" in md

    v = verify_with_nvcc(subjects, reps, nc420.tree.include_root, nvcc=nvcc)
    assert v.agree, v.mismatches
    assert v.fields > 60


def test_cli_fmha_json(nc420, capsys):
    code = main(
        [
            "layout",
            "--cutlass",
            str(nc420.tree.include_root),
            "--arch",
            "sm100",
            "--header",
            str(HEADER),
            "--type",
            "attention::Forward",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["subject_kind"] == "fmha"
    assert doc["kernel"] is None and doc["mainloop"] is None and doc["epilogue"] is None
    assert doc["storage"]["size"] == 164080 and doc["smem_bytes"] == 164080
    assert [f["name"] for f in doc["storage"]["fields"]] == ["<anonymous>", "pipelines", "barrier_o", "tmem_base_ptr"]
    assert doc["headroom_bytes"] == 232448 - 164080
