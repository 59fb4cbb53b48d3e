"""Plots: the drawn elements (member boxes and labels, padding, the zoomed panel, the capacity
line and the headroom, bars by verdict, the y band), read back from the matplotlib Figure,
the SVG text and the PNG's header. The structs here are written by hand (offsets and sizes in
bytes), or tests/handed.md's for the real layout."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("matplotlib")

from cutlass_layout import Config
from cutlass_layout.cli import main
from cutlass_layout.commands.sweep import SweepRecord, SweepResult
from cutlass_layout.errors import BadInput, DoesNotCompile
from cutlass_layout.model import CompileError, FieldLayout, LayoutReport, Provenance, StructLayout
from cutlass_layout.reports.plot import (
    DPI,
    MISSING,
    VERDICT_COLORS,
    check_plot_path,
    memory_map,
    plot_layout,
    plot_sweep_result,
    sweep_chart,
)

CAP = 101376
ORIGIN = "flashinfer-python==0.7.2.post1 (wheel flashinfer_python-0.7.2.post1-py3-none-any.whl, cached)"


def _struct():
    """A small kernel struct: a big member with two children, two small ones, padding."""
    tensors = FieldLayout(
        "tensors",
        "TensorStorage",
        0,
        82944,
        128,
        fields=[
            FieldLayout("mainloop", "M", 0, 73728, 1024),
            FieldLayout("epilogue", "E", 73728, 8704, 128),
        ],
    )
    pipes = FieldLayout("pipelines", "P", 82944, 240, 16)
    maps = FieldLayout("tensormaps", "T", 83328, 896, 128, padding_before=144)
    return StructLayout("SharedStorage", 84992, 1024, 768, [tensors, pipes, maps])


def _prov(origin=ORIGIN):
    return Provenance("r", "4.5.0", "h", origin, "c", "p", "s", [])


def _texts(fig, axes=None):
    out = []
    for ax in fig.axes if axes is None else [fig.axes[axes]]:
        out += [t.get_text() for t in ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            out += [t.get_text() for t in leg.get_texts()]
    return out


def _by_gid(fig, gid, axes=None):
    out = []
    for ax in fig.axes if axes is None else [fig.axes[axes]]:
        out += [a for a in ax.patches + ax.lines + ax.texts if a.get_gid() == gid]
    return out


def _labels(fig, gid):
    return [t.get_text() for t in _by_gid(fig, gid)]


def test_memory_map_members_padding_capacity():
    fig = memory_map(_struct(), CAP, depth=2)
    assert len(fig.axes) == 2  # the whole struct, and a zoom on the small members
    full = _texts(fig, 0)
    assert "tensors\n82944 B" in full
    assert "mainloop\n73728 B" in full and "epilogue\n8704 B" in full
    assert "capacity 101376 B" in full and "sizeof 84992 B" in full
    (box,) = _by_gid(fig, "member:tensors.epilogue")
    assert (box.get_x(), box.get_width()) == (73728, 8704)
    (cap,) = _by_gid(fig, "capacity")
    assert list(cap.get_xdata()) == [CAP, CAP]
    pads = sorted((p.get_x(), p.get_width()) for p in _by_gid(fig, "padding"))
    # inside tensors: 512 after epilogue; top level: 144 before tensormaps, 768 tail
    assert pads == [(82432, 512), (83184, 144), (84224, 768)]
    # too narrow at full scale: drawn again in the zoom, at the same bytes, labelled there
    (zp,) = _by_gid(fig, "zoom:member:pipelines")
    assert (zp.get_x(), zp.get_width()) == (82944, 240)
    (zt,) = _by_gid(fig, "zoom:member:tensormaps")
    assert (zt.get_x(), zt.get_width()) == (83328, 896)
    assert _labels(fig, "zoom:label:tensormaps")[0].replace("\n", " ") == "tensormaps 896 B"
    assert _labels(fig, "zoom:label:pipelines")[0].replace("\n", " ") == "pipelines 240 B"
    lo, hi = fig.axes[1].get_xlim()
    assert lo <= 82432 and hi >= 84992 and hi - lo < 84992 / 2
    # the headroom, sizeof .. capacity
    (room,) = _by_gid(fig, "headroom", axes=0)
    assert room.get_gid() == "headroom"
    assert "headroom 16384 B" in _texts(fig)


def test_memory_map_over_capacity_and_no_zoom_when_all_is_large():
    big = StructLayout(
        "S", 110000, 16, 0, [FieldLayout("a", "A", 0, 60000, 16), FieldLayout("b", "B", 60000, 50000, 16)]
    )
    fig = memory_map(big, CAP, depth=2)
    assert len(fig.axes) == 1
    assert _by_gid(fig, "overshoot") and not _by_gid(fig, "headroom")
    assert "over capacity by 8624 B" in _texts(fig)
    assert "a\n60000 B" in _texts(fig) and "b\n50000 B" in _texts(fig)


def test_memory_map_depth_1_has_no_children():
    fig = memory_map(_struct(), CAP, depth=1)
    assert not _by_gid(fig, "member:tensors.mainloop")
    assert _by_gid(fig, "member:tensors")


def _report():
    from cutlass_layout.model import Constant

    return LayoutReport(
        config=Config(tile=(128, 128, 128)).to_dict(),
        provenance=_prov(),
        stages=4,
        capacity=Constant("sm120_smem_capacity_bytes", CAP),
        kernel=_struct(),
    )


def test_svg_text_png_dpi_and_title(tmp_path):
    rep = _report()
    path = tmp_path / "map.svg"
    fig = plot_layout(rep, path)
    title = fig.get_suptitle()
    assert title.startswith("flashinfer-python 0.7.2.post1 (CUTLASS 4.5.0): kernel SharedStorage")
    assert "84992 B of 101376 B: fits, headroom 16384 B" in title
    svg = path.read_text()
    assert "capacity 101376 B" in svg and "tensors" in svg and 'id="capacity"' in svg
    png = tmp_path / "map.png"
    plot_layout(rep, png, tile_bytes=True)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(png) as im:
        assert round(im.info["dpi"][0]) == DPI == 150
        assert im.size[0] >= 1500  # 11 inches at 150 dpi, less the trimmed margins
    # the tile in the unit typed: K 128 elements of nvfp4 = 64 bytes
    assert "tile 128x128x64B" in plot_layout(rep, tile_bytes=True).get_suptitle()


def test_plot_layout_refuses_error_and_bad_names(tmp_path):
    rep = LayoutReport(
        config=Config().to_dict(),
        provenance=_prov(),
        error=CompileError("static_assert", "Specialization requires Stages set to value 2 or more."),
    )
    with pytest.raises(DoesNotCompile):
        plot_layout(rep, tmp_path / "x.svg")
    rep = replace(rep, error=None, kernel=_struct())
    with pytest.raises(BadInput, match=r"\.svg or \.png"):
        plot_layout(rep, tmp_path / "x.pdf")
    with pytest.raises(BadInput, match="does not exist"):
        plot_layout(rep, tmp_path / "missing" / "x.svg")


def test_without_matplotlib_one_line(monkeypatch, tmp_path, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if absent
    with pytest.raises(BadInput) as exc:
        check_plot_path(tmp_path / "x.png")
    assert (
        str(exc.value)
        == MISSING
        == "plots need matplotlib (the plot extra): pip install matplotlib, or pip install -e '.[plot]' in the clone"
    )
    # the command says so before any work (no CUTLASS tree is even looked for)
    assert main(["layout", "--cutlass", str(tmp_path / "nowhere"), "--plot", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {MISSING}"


def _rec(tile, kernel, verdict, stages=3, mx=None, mxb=None, cfg=None):
    return SweepRecord(
        cfg or Config(tile=tile),
        stages,
        None,
        None,
        kernel,
        CAP if kernel else None,
        (CAP - kernel) if kernel else None,
        verdict,
        mx,
        mxb,
    )


def test_sweep_chart_bars_by_verdict_and_capacity():
    recs = [
        _rec((128, 128, 128), 84992, "fits", 4, 4, 84992),
        _rec((128, 32, 256), 102400, "over_capacity", 4, 3, 79872),
        _rec((128, 256, 256), None, "does_not_compile", None),
        _rec((128, 64, 128), CAP, "exact_fit", 3, 3, CAP),
    ]
    fig = sweep_chart(recs)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if (p.get_gid() or "").startswith("bar:")]
    assert [b.get_height() for b in bars] == [84992, 102400, 0, CAP]
    from matplotlib.colors import to_rgba

    assert [b.get_facecolor() for b in bars] == [
        to_rgba(VERDICT_COLORS[v]) for v in ("fits", "over_capacity", "does_not_compile", "exact_fit")
    ]
    assert VERDICT_COLORS["exact_fit"] != VERDICT_COLORS["fits"]
    assert bars[3].get_hatch() == "//"  # an exact fit is drawn apart from a fit
    # the config that does not compile: a hatched column over the whole band, labelled
    (nc,) = _by_gid(fig, "ncbar:2")
    assert nc.get_hatch() == "xx" and nc.get_height() > 0
    assert "does not compile" in [t.get_text() for t in ax.texts]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["128x128x128", "128x32x256", "128x256x256", "128x64x128"]
    (cap,) = [ln for ln in ax.lines if ln.get_gid() == "capacity"]
    assert list(cap.get_ydata()) == [CAP, CAP]
    (label,) = _by_gid(fig, "capacity-label")
    assert label.get_text() == "capacity 101376 B"
    assert label.get_position()[0] > 1.0  # right of the bars (axes coordinates)
    (dot,) = [ln for ln in ax.lines if ln.get_gid() == "max:1"]
    assert list(dot.get_ydata()) == [79872]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"fits", "over capacity", "does not compile", "exact fit (headroom 0)"} <= set(legend)
    # the band around the capacity: not from 0, and the axis says where it starts
    lo, hi = ax.get_ylim()
    assert 0 < lo <= 79872 and hi > 102400
    assert lo % 5000 == 0 and f"axis from {int(lo)} B, not 0" in ax.get_ylabel()


def test_sweep_chart_cuts_outliers_and_labels_tiles_in_bytes():
    recs = [
        _rec((128, 128, 128), 84992, "fits", 4),
        _rec((128, 256, 128), 236544, "over_capacity", 4, cfg=Config(tile=(128, 256, 128), stages=4)),
    ]
    fig = sweep_chart(recs, tile_bytes=True)
    ax = fig.axes[0]
    assert ax.get_ylim()[1] < 236544  # the band stays readable
    assert _labels(fig, "cut:1") == ["4 st, 236544 B \u2191"]
    # nvfp4 A: K 128 elements = 64 bytes; the requested stage counts differ, so they are named
    assert [t.get_text() for t in ax.get_xticklabels()] == ["128x128x64B auto", "128x256x64B 4 st"]


def test_sweep_result_title_and_one_config_is_a_memory_map(tmp_path):
    r = _rec((128, 128, 128), 84992, "fits", 4, 4, 84992)
    r.kernel_layout = _struct()
    fig = plot_sweep_result(SweepResult(_prov(), [Config()], [r]), tmp_path / "one.svg")
    assert "tensors\n82944 B" in _texts(fig)
    assert fig.get_suptitle().startswith("flashinfer-python 0.7.2.post1 (CUTLASS 4.5.0)")
    two = [r, _rec((128, 32, 256), 102400, "over_capacity")]
    fig = plot_sweep_result(
        SweepResult(_prov("directory /tmp/cutlass/include"), [Config(), Config(tile=(128, 32, 256))], two)
    )
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["128x128x128", "128x32x256"]
    # a directory of CUTLASS, no distribution named: its version, never the path
    assert fig.get_suptitle().startswith("CUTLASS 4.5.0: kernel SharedStorage per config")


@pytest.mark.network
def test_plot_real_layout(fi072, tmp_path):
    """tests/handed.md A, TRT-LLM MoE 128x128x128: tensors.mainloop 73728 @0, tensors.epilogue
    12800 @73728, pipelines 256 @87040, scheduler_response 128 @87296, tensormaps 896 @87424."""
    from cutlass_layout import layout

    rep = layout(Config(preset="trtllm-moe"), fi072)
    fig = plot_layout(rep, tmp_path / "real.png")
    expect = {
        "tensors.mainloop": (0, 73728),
        "tensors.epilogue": (73728, 12800),
        "pipelines": (87040, 256),
        "scheduler_response": (87296, 128),
        "tensormaps": (87424, 896),
    }
    for name, (off, size) in expect.items():
        (box,) = _by_gid(fig, f"member:{name}")
        assert (box.get_x(), box.get_width()) == (off, size), name
    texts = _texts(fig)
    assert "mainloop\n73728 B" in texts and "epilogue\n12800 B" in texts
    # small at full scale, labelled in the zoom (or listed beside it with bytes and offset)
    for name, (off, size) in (
        ("pipelines", (87040, 256)),
        ("tensormaps", (87424, 896)),
        ("scheduler_response", (87296, 128)),
    ):
        (box,) = _by_gid(fig, f"zoom:member:{name}")
        assert (box.get_x(), box.get_width()) == (off, size)
        shown = [x.replace("\n", " ") for x in _labels(fig, f"zoom:label:{name}")]
        assert shown == [f"{name} {size} B"] or f"{name}  {size} B @ {off}" in texts, name
    assert "capacity 101376 B" in texts and "headroom 12288 B" in texts


def _sm90_struct():
    """An SM90-sized kernel (the mixed-input MoE tactics of issue 43 are ~358 KiB): 366592 B =
    358 KiB, over the 232448 B (227 KiB) an SM90 block can opt in to; members at 1024-byte
    offsets, a small tail the zoom shows."""
    tensors = FieldLayout("tensors", "T", 0, 364544, 1024, fields=[FieldLayout("mainloop", "M", 0, 364544, 1024)])
    pipes = FieldLayout("pipelines", "P", 364544, 256, 16)
    maps = FieldLayout("tensormaps", "TM", 364800, 896, 128)
    return StructLayout("SharedStorage", 366592, 1024, 896, [tensors, pipes, maps])


def _drawn_ticks(fig, ax):
    """(location, text, window extent) of the x tick labels drawn in ``ax``'s view."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    lo, hi = ax.get_xlim()
    out = []
    for loc, t in zip(ax.get_xticks(), ax.get_xticklabels()):
        if lo <= loc <= hi and t.get_visible() and t.get_text():
            out.append((loc, t.get_text(), t.get_window_extent(renderer)))
    return out


@pytest.mark.parametrize("width", [11, 6, 4])
@pytest.mark.parametrize("which", ["sm90", "sm120"])
def test_memory_map_tick_labels_never_overlap(which, width):
    struct, cap = (_sm90_struct(), 232448) if which == "sm90" else (_struct(), CAP)
    fig = memory_map(struct, cap)
    fig.set_size_inches(width, fig.get_size_inches()[1])
    for i, ax in enumerate(fig.axes):
        ticks = _drawn_ticks(fig, ax)
        assert len(ticks) >= (2 if width >= 6 else 1), (i, ticks)
        # neighbours' label boxes apart (the 350 KB map's were one run of digits)
        for (_, ta, a), (_, tb, b) in zip(ticks, ticks[1:]):
            assert a.x1 < b.x0, (i, ta, tb)
        if i == 0:  # the whole struct: KiB, at multiples of 1 KiB, and the axis says so
            assert ax.get_xlabel().startswith("KiB from the start of the struct (1 KiB = 1024 B)")
            assert all(loc % 1024 == 0 and text == str(int(loc) // 1024) for loc, text, _ in ticks)
        else:  # the zoom (a few KiB): whole bytes
            assert all(text == str(int(loc)) for loc, text, _ in ticks)
        if width == 11:  # room for at least four ticks over the full width
            assert len(ticks) >= 4, (i, [t for _, t, _ in ticks])


def test_memory_map_sm90_ticks_are_power_of_two_kib_steps():
    fig = memory_map(_sm90_struct(), 232448)
    locs = [loc for loc, _, _ in _drawn_ticks(fig, fig.axes[0])]
    steps = {b - a for a, b in zip(locs, locs[1:])}
    (step,) = {int(s) for s in steps}  # evenly spaced
    assert step % 1024 == 0 and (step // 1024) & (step // 1024 - 1) == 0  # 2^k KiB
    assert locs[0] == 0 and locs[-1] <= 366592 * 1.02 < locs[-1] + step


def test_sweep_over_presets_names_each_bars_c_type():
    """Presets decide C (Config.element_c, as documented on Config.preset): flashinfer's
    grouped GEMM has no source C (``void``), trtllm-moe's C is bf16. A chart over both names
    each bar's own C, and the title's shared line names no C (it used to say the first bar's,
    ``C void``, for all)."""
    assert Config(preset="flashinfer").element_c == "void" and Config(preset="trtllm-moe").element_c == "bf16"

    def rec(preset, tile, kernel, verdict):
        return _rec(tile, kernel, verdict, cfg=Config(preset=preset, tile=tile))

    recs = [
        rec("flashinfer", (128, 128, 128), 84992, "fits"),
        rec("trtllm-moe", (128, 128, 128), 91136, "fits"),
        rec("trtllm-moe", (128, 256, 128), 117760, "over_capacity"),
    ]
    fig = plot_sweep_result(SweepResult(_prov(), [r.config for r in recs], recs))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "128x128x128 flashinfer C=void",
        "128x128x128 trtllm-moe C=bf16",
        "128x256x128 trtllm-moe C=bf16",
    ]
    shared = fig.get_suptitle().split("\n")[1]
    assert "C " not in shared and "D bf16" in shared  # D is bf16 for both presets
    # the labels are parallel strips at 45 degrees: apart when the distance between
    # neighbouring ticks, across the strips (times sin 45), exceeds a line of text
    import math

    ticks = _drawn_ticks(fig, ax)
    label = ax.get_xticklabels()[0]
    assert label.get_rotation() == 45
    line_px = label.get_fontsize() * fig.dpi / 72 * 1.2
    for (_, ta, a), (_, tb, b) in zip(ticks, ticks[1:]):
        assert (b.x1 - a.x1) * math.sin(math.radians(45)) > line_px, (ta, tb)
    # one preset: its C stays in the title, off the bars
    one = [
        rec("trtllm-moe", (128, 128, 128), 91136, "fits"),
        rec("trtllm-moe", (128, 256, 128), 117760, "over_capacity"),
    ]
    fig = plot_sweep_result(SweepResult(_prov(), [r.config for r in one], one))
    assert "C bf16" in fig.get_suptitle()
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["128x128x128", "128x256x128"]
