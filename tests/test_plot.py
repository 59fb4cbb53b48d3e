"""Plots: the drawn elements (member boxes and labels, padding, the capacity line, bars by
verdict), read back from the matplotlib Figure and from the SVG text."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from cutlass_layout import Config
from cutlass_layout.errors import BadInput, DoesNotCompile
from cutlass_layout.model import CompileError, FieldLayout, LayoutReport, Provenance, StructLayout
from cutlass_layout.reports.plot import VERDICT_COLORS, memory_map, plot_layout, sweep_chart
from cutlass_layout.sweep import SweepRecord, SweepResult

CAP = 101376


def _struct():
    """A small kernel struct: a big member with two children, two small ones, padding."""
    tensors = FieldLayout("tensors", "TensorStorage", 0, 82944, 128, fields=[
        FieldLayout("mainloop", "M", 0, 73728, 1024),
        FieldLayout("epilogue", "E", 73728, 8704, 128),
    ])
    pipes = FieldLayout("pipelines", "P", 82944, 240, 16)
    maps = FieldLayout("tensormaps", "T", 83328, 896, 128, padding_before=144)
    return StructLayout("SharedStorage", 84992, 1024, 768, [tensors, pipes, maps])


def _texts(fig):
    ax = fig.axes[0]
    out = [t.get_text() for t in ax.texts]
    leg = ax.get_legend()
    if leg is not None:
        out += [t.get_text() for t in leg.get_texts()]
    return out


def _by_gid(fig, gid):
    ax = fig.axes[0]
    return [a for a in ax.patches + ax.lines if a.get_gid() == gid]


def test_memory_map_members_padding_capacity():
    fig = memory_map(_struct(), CAP, depth=2)
    texts = _texts(fig)
    assert "tensors\n82944 B" in texts
    assert "mainloop\n73728 B" in texts and "epilogue\n8704 B" in texts
    # too narrow for an inline label: listed with size and offset
    assert "pipelines  240 B @ 82944" in texts and "tensormaps  896 B @ 83328" in texts
    assert "capacity 101376 B" in texts
    (box,) = _by_gid(fig, "member:tensors.epilogue")
    assert (box.get_x(), box.get_width()) == (73728, 8704)
    (cap,) = _by_gid(fig, "capacity")
    assert list(cap.get_xdata()) == [CAP, CAP]
    pads = sorted((p.get_x(), p.get_width()) for p in _by_gid(fig, "padding"))
    # inside tensors: 512 after epilogue; top level: 144 before tensormaps, 768 tail
    assert pads == [(82432, 512), (83184, 144), (84224, 768)]


def test_memory_map_depth_1_has_no_children():
    fig = memory_map(_struct(), CAP, depth=1)
    assert not _by_gid(fig, "member:tensors.mainloop")
    assert _by_gid(fig, "member:tensors")


def test_svg_text(tmp_path):
    rep = LayoutReport(config=Config().to_dict(),
                       provenance=Provenance("r", "4.5.0", "h", "o", "c", "p", "s", []), stages=4)
    from cutlass_layout.model import Constant

    rep.capacity = Constant("sm120_smem_capacity_bytes", CAP)
    rep.kernel = _struct()
    path = tmp_path / "map.svg"
    fig = plot_layout(rep, path)
    assert fig.axes
    svg = path.read_text()
    assert "capacity 101376 B" in svg and "tensors" in svg and 'id="capacity"' in svg
    png = tmp_path / "map.png"
    plot_layout(rep, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_layout_refuses_error_and_bad_names(tmp_path):
    rep = LayoutReport(config=Config().to_dict(),
                       provenance=Provenance("r", "4.5.0", "h", "o", "c", "p", "s", []))
    rep.error = CompileError("static_assert", "Specialization requires Stages set to value 2 or more.")
    with pytest.raises(DoesNotCompile):
        plot_layout(rep, tmp_path / "x.svg")
    rep.error = None
    rep.kernel = _struct()
    with pytest.raises(BadInput, match=r"\.svg or \.png"):
        plot_layout(rep, tmp_path / "x.pdf")
    with pytest.raises(BadInput, match="does not exist"):
        plot_layout(rep, tmp_path / "missing" / "x.svg")


def _rec(tile, kernel, verdict, stages=3, mx=None, mxb=None):
    return SweepRecord(Config(tile=tile), stages, None, None, kernel,
                       CAP if kernel else None, (CAP - kernel) if kernel else None, verdict, mx, mxb)


def test_sweep_chart_bars_by_verdict_and_capacity():
    recs = [_rec((128, 128, 128), 84992, "fits", 4, 4, 84992),
            _rec((128, 32, 256), 102400, "over_capacity", 4, 3, 79872),
            _rec((128, 256, 256), None, "does_not_compile", None)]
    fig = sweep_chart(recs)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if (p.get_gid() or "").startswith("bar:")]
    assert [b.get_height() for b in bars] == [84992, 102400, 0]
    from matplotlib.colors import to_rgba

    assert [b.get_facecolor() for b in bars] == [to_rgba(VERDICT_COLORS[v]) for v in
                                                 ("fits", "over_capacity", "does_not_compile")]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["128x128x128", "128x32x256", "128x256x256"]
    (cap,) = [ln for ln in ax.lines if ln.get_gid() == "capacity"]
    assert list(cap.get_ydata()) == [CAP, CAP]
    assert "capacity 101376 B" in [t.get_text() for t in ax.texts]
    (dot,) = [ln for ln in ax.lines if ln.get_gid() == "max:1"]
    assert list(dot.get_ydata()) == [79872]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"fits", "over capacity", "does not compile"} <= set(legend)


def test_sweep_result_one_config_is_a_memory_map(tmp_path):
    from cutlass_layout.reports.plot import plot_sweep_result

    r = _rec((128, 128, 128), 84992, "fits", 4, 4, 84992)
    r.kernel_layout = _struct()
    prov = Provenance("r", "4.5.0", "h", "o", "c", "p", "s", [])
    fig = plot_sweep_result(SweepResult(prov, [Config()], [r]), tmp_path / "one.svg")
    assert "tensors\n82944 B" in _texts(fig)
    fig = plot_sweep_result(SweepResult(prov, [Config(), Config(tile=(128, 32, 256))],
                                        [r, _rec((128, 32, 256), 102400, "over_capacity")]))
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["128x128x128", "128x32x256"]


@pytest.mark.network
def test_plot_real_layout(fi072, tmp_path):
    """handed.md A, TRT-LLM MoE 128x128x128: tensors.mainloop 73728 @0, tensors.epilogue
    12800 @73728, pipelines 256 @87040, scheduler_response 128 @87296, tensormaps 896 @87424."""
    from cutlass_layout import layout

    rep = layout(Config(preset="trtllm-moe"), fi072)
    fig = plot_layout(rep, tmp_path / "real.svg")
    expect = {"tensors.mainloop": (0, 73728), "tensors.epilogue": (73728, 12800),
              "pipelines": (87040, 256), "scheduler_response": (87296, 128),
              "tensormaps": (87424, 896)}
    for name, (off, size) in expect.items():
        (box,) = _by_gid(fig, f"member:{name}")
        assert (box.get_x(), box.get_width()) == (off, size), name
    texts = _texts(fig)
    assert "mainloop\n73728 B" in texts and "epilogue\n12800 B" in texts
    assert "pipelines  256 B @ 87040" in texts
    assert "capacity 101376 B" in texts
    assert "tensors" in (tmp_path / "real.svg").read_text()
