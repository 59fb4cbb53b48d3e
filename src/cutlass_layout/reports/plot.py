"""Pictures (matplotlib, no display needed): a kernel's SharedStorage as a memory map, and a
sweep's kernel bytes against the capacity.

Every function returns the :class:`matplotlib.figure.Figure` it drew (tests and callers can
inspect it) and writes it when given a path: ``.svg`` (text stays text) or ``.png`` at
:data:`DPI` dots per inch. Figures are built without pyplot, so no GUI backend or global
state is involved. matplotlib is the ``plot`` extra (``pip install matplotlib``, or ``pip install -e '.[plot]'`` in the clone);
without it the plotting calls raise :class:`BadInput` with that one line.

What a reader should see at a glance, and how it is drawn:

* **memory map** (:func:`memory_map`): the struct along its bytes, one row per member level,
  each member a box labelled with its name and bytes; a member's children in lighter shades
  of its color; padding hatched grey; the capacity as a labelled dashed line, and the
  headroom (or the overshoot) between ``sizeof`` and the capacity shaded. Members too small
  to label at full scale are drawn again in a zoomed panel of the byte range they sit in
  (linked to the full view); what is still too small is listed beside it. The x axis of the
  whole struct is in KiB (16 KiB and wider), the zoom's in bytes, ticks at power-of-two steps,
  as many as fit the axis when it is drawn with room between labels (so at any figure size).
* **sweep chart** (:func:`sweep_chart`): a bar per config, colored by verdict (an exact fit,
  headroom 0, has its own color and hatch; a config that does not compile is a hatched
  grey column labelled so), the stage count over each bar, a dot where the largest stage
  count that fits differs; the y axis spans the band around the capacity (its start is
  written on the axis) and the capacity line is labelled outside the bars. The title names
  only what every config shares; a C or D type that differs (presets) is on each bar's label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import BadInput, DoesNotCompile
from ..model import Verdict

FORMATS = (".svg", ".png")
#: Resolution of PNG files.
DPI = 150
VERDICT_COLORS = {
    Verdict.FITS: "#4c9a2a",
    Verdict.EXACT_FIT: "#e0a100",
    Verdict.OVER_CAPACITY: "#c0392b",
    Verdict.DOES_NOT_COMPILE: "#bdbdbd",
}
VERDICT_LABELS = {
    Verdict.FITS: "fits",
    Verdict.EXACT_FIT: "exact fit (headroom 0)",
    Verdict.OVER_CAPACITY: "over capacity",
    Verdict.DOES_NOT_COMPILE: "does not compile",
}
_PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#b07aa1",
    "#76b7b2",
    "#edc948",
    "#ff9da7",
    "#9c755f",
    "#e15759",
    "#bab0ac",
)
_PAD_COLOR = "#e6e6e6"
_CAP_COLOR = "#c0392b"
_FONT = 9
MISSING = "plots need matplotlib (the plot extra): pip install matplotlib, or pip install -e '.[plot]' in the clone"


def _matplotlib():
    try:
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError:
        raise BadInput(MISSING) from None
    return Figure, Patch


def check_plot_path(path) -> Path:
    """Validate a plot file name before any work: ``.svg`` or ``.png``, in an existing
    directory, matplotlib importable. Raises :class:`BadInput`."""
    p = Path(path)
    if p.suffix.lower() not in FORMATS:
        raise BadInput(f"plot file {str(p)!r}: give a .svg or .png name")
    if not p.parent.is_dir():
        raise BadInput(f"plot file {str(p)!r}: directory {str(p.parent)!r} does not exist")
    _matplotlib()
    return p


def _save(fig, path) -> None:
    if path is None:
        return
    from matplotlib import rc_context

    p = check_plot_path(path)
    try:  # SVG text stays text (searchable, selectable), not glyph paths
        with rc_context({"svg.fonttype": "none", "svg.hashsalt": "cutlass-layout"}):
            fig.savefig(
                p,
                format=p.suffix.lower()[1:],
                dpi=DPI,
                bbox_inches="tight",
                metadata={"Date": None} if p.suffix.lower() == ".svg" else None,
            )
    except OSError as exc:
        raise BadInput(f"cannot write plot file {p}: {exc.strerror or exc}") from None


def _renderer(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    return canvas.get_renderer()


def _gaps(fields, start: int, end: int) -> list[tuple[int, int]]:
    """Byte ranges in [start, end) that no member covers (padding), as (offset, size)."""
    spans = sorted((f.offset, f.offset + f.size) for f in fields)
    out, pos = [], start
    for a, b in spans:
        if a > pos:
            out.append((pos, a - pos))
        pos = max(pos, b)
    if end > pos:
        out.append((pos, end - pos))
    return out


def _shade(color: str, amount: float) -> tuple:
    """``color`` mixed with white (``amount`` 0 = itself, 1 = white)."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(color)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def _levels(struct, depth: int):
    """Per level: [(field, dotted name, color, parent or None)], and the padding of each
    level as (offset, size)."""
    levels, pads = [], []
    level: list[tuple[Any, str, Any, Any]] = [
        (f, f.name, _PALETTE[i % len(_PALETTE)], None) for i, f in enumerate(struct.fields)
    ]
    parents = [(struct.fields, 0, struct.size)]
    for _ in range(depth):
        if not level:
            break
        levels.append(level)
        pads.append([g for fields, a, b in parents for g in _gaps(fields, a, b)])
        nxt = []
        for f, dotted, color, _ in level:
            for j, c in enumerate(f.fields):
                amount = 0.22 + 0.56 * (j % 4) / 3  # four shades, lighter than the parent
                nxt.append((c, f"{dotted}.{c.name}", _shade(color, amount), f))
        parents = [(f.fields, f.offset, f.offset + f.size) for f, _, _, _ in level if f.fields]
        level = nxt
    return levels, pads


def _fits(text, box_left: float, box_width: float, renderer, ax) -> bool:
    """Whether a drawn text fits inside a box of ``box_width`` bytes (in display units)."""
    bb = text.get_window_extent(renderer)
    x0, x1 = ax.transData.transform([(box_left, 0), (box_left + box_width, 0)])[:, 0]
    return bb.width + 4 <= abs(x1 - x0)


def _draw_level_boxes(
    ax, levels, pads, lo: int, hi: int, renderer, *, prefix: str, label_pad: bool = True, labelled: set | None = None
) -> list:
    """Boxes of every member overlapping [lo, hi) (gid ``<prefix>member:<dotted>``), labels
    that fit (gid ``<prefix>label:<dotted>``) for members not in ``labelled`` (which gets
    the ones labelled here), padding (gid ``<prefix>padding``); returns the members in
    range left without a label."""
    unlabelled = []
    labelled = set() if labelled is None else labelled
    n = len(levels)
    for d, level in enumerate(levels):
        y = n - 1 - d
        height = 0.78
        for f, dotted, color, _ in level:
            if f.offset + f.size <= lo or f.offset >= hi or f.size == 0:
                if f.size == 0 and lo <= f.offset < hi:
                    unlabelled.append((f, dotted, color))
                continue
            ax.barh(
                y,
                f.size,
                left=f.offset,
                height=height,
                color=color,
                edgecolor="black",
                linewidth=0.6,
                gid=f"{prefix}member:{dotted}",
            )
            if dotted in labelled:
                continue
            left, right = max(f.offset, lo), min(f.offset + f.size, hi)
            cx = (left + right) / 2
            placed = False
            for label in (f"{f.name}\n{f.size} B", f"{f.name} {f.size} B"):
                t = ax.text(
                    cx,
                    y,
                    label,
                    ha="center",
                    va="center",
                    fontsize=_FONT,
                    gid=f"{prefix}label:{dotted}",
                    clip_on=True,
                    zorder=5,
                    bbox={"facecolor": color, "edgecolor": "none", "pad": 0.6},
                )
                if _fits(t, left, right - left, renderer, ax):
                    placed = True
                    labelled.add(dotted)
                    break
                t.remove()
            if not placed:
                unlabelled.append((f, dotted, color))
        for off, size in pads[d]:
            if off + size <= lo or off >= hi:
                continue
            ax.barh(
                y,
                size,
                left=off,
                height=height,
                color=_PAD_COLOR,
                hatch="////",
                edgecolor="#8a8a8a",
                linewidth=0.4,
                gid=f"{prefix}padding",
            )
            if label_pad:
                left, right = max(off, lo), min(off + size, hi)
                t = ax.text(
                    (left + right) / 2,
                    y - height / 2 - 0.06,
                    f"pad {size}",
                    ha="center",
                    va="top",
                    fontsize=_FONT - 2,
                    color="#555555",
                    clip_on=True,
                )
                if not _fits(t, left, right - left, renderer, ax):
                    t.remove()
    return unlabelled


def _capacity_marks(ax, struct_size: int, capacity: int | None, top: float, *, prefix: str, label: bool = True) -> None:
    """The ``sizeof`` line, the capacity line and the headroom (or overshoot) between them;
    with ``label`` their labels above the axes, each on its own side of its line."""
    ax.axvline(struct_size, color="black", linewidth=0.9, linestyle=":", gid=f"{prefix}sizeof")
    over = capacity is not None and struct_size > capacity
    if label:
        ax.text(
            struct_size,
            top,
            f"sizeof {struct_size} B",
            fontsize=_FONT,
            va="bottom",
            ha="left" if over else "right",
            gid=f"{prefix}sizeof-label",
            clip_on=False,
        )
    if capacity is None:
        return
    ax.axvline(capacity, color=_CAP_COLOR, linewidth=1.6, linestyle="--", gid=f"{prefix}capacity")
    a, b = sorted((struct_size, capacity))
    ax.axvspan(
        a,
        b,
        color=_CAP_COLOR if over else VERDICT_COLORS[Verdict.FITS],
        alpha=0.12,
        lw=0,
        zorder=0.5,
        gid=f"{prefix}{'overshoot' if over else 'headroom'}",
    )
    if label:
        ax.text(
            capacity,
            top,
            f"capacity {capacity} B",
            color=_CAP_COLOR,
            fontsize=_FONT,
            ha="right" if over else "left",
            va="bottom",
            gid=f"{prefix}capacity-label",
            clip_on=False,
        )


def _zoom_range(levels, pads, size: int, total: int) -> tuple[int, int] | None:
    """The byte range of the most small members (too narrow to label at full scale: under
    5% of ``total``), or None when there are none."""
    small = sorted(
        [(f.offset, f.offset + max(f.size, 1)) for lv in levels for f, _, _, _ in lv if f.size < total * 0.05]
        + [(off, off + size) for pad in pads for off, size in pad if size < total * 0.05]
    )
    if not small:
        return None
    clusters: list[list[Any]] = []  # [[lo, hi], members]
    cur: list[Any] = [list(small[0]), 1]
    for a, b in small[1:]:
        if a - cur[0][1] <= total * 0.05:
            cur[0][1] = max(cur[0][1], b)
            cur[1] += 1
        else:
            clusters.append(cur)
            cur = [[a, b], 1]
    clusters.append(cur)
    (lo, hi), _ = max(clusters, key=lambda c: c[1])
    # round out to the members that start or end the range, so no box is cut
    for lv in levels:
        for f, _, _, _ in lv:
            if f.offset < lo < f.offset + f.size and f.size < total * 0.05:
                lo = f.offset
            if f.offset < hi < f.offset + f.size and f.size < total * 0.05:
                hi = f.offset + f.size
    if hi - lo >= total * 0.5:
        return None
    return lo, hi


def memory_map(struct, capacity: int | None = None, *, title: str | None = None, depth: int = 2):
    """Draw a SharedStorage as boxes along its bytes.

    Args:
        struct: a :class:`~cutlass_layout.model.StructLayout` (offsets and sizes in bytes).
        capacity: bytes per block; a dashed line labelled ``capacity N B``, the headroom (or
            the overshoot) between ``sizeof`` and it shaded.
        title: the figure's title (a line per ``\\n``).
        depth: 1 = top-level members only; 2 = also their members, in a second row.

    Returns:
        The Figure. Its first axes is the whole struct; each member box is a patch with
        ``gid`` ``member:<dotted name>`` labelled ``<name>\\n<size> B`` (or on one line) where
        that fits (``gid`` ``label:<dotted name>``). When members are too narrow to label,
        a second axes zooms on the byte range that holds most of them (``gid`` prefix
        ``zoom:``), and those still too narrow are listed beside it as
        ``<dotted name>  <size> B @ <offset>``. Padding (gaps between members and tail
        padding) is a hatched grey patch with ``gid`` ``padding``; the capacity line has
        ``gid`` ``capacity``, its label ``capacity-label``. The first axes' x ticks are
        labelled in KiB where the struct spans 16 KiB or more (its x label says so), the
        zoom's in bytes; tick labels never touch, whatever size the figure is drawn at.
    """
    Figure, Patch = _matplotlib()
    levels, pads = _levels(struct, depth)
    right = max(struct.size, capacity or 0)
    zoom = _zoom_range(levels, pads, struct.size, right)
    n = max(1, len(levels))
    row = 0.62
    fig = Figure(figsize=(11, (1.35 + row * n) * (2 if zoom else 1) + 0.5), layout="constrained")
    renderer = _renderer(fig)
    if zoom:
        ax, zax = fig.subplots(2, 1, gridspec_kw={"hspace": 0.15})
    else:
        ax, zax = fig.add_subplot(), None
    names = ["members", "their members"][:n]
    for a in (ax, zax):
        if a is None:
            continue
        a.set_ylim(-0.55, n - 0.45)
        a.set_yticks([n - 1 - d for d in range(n)], names, fontsize=_FONT)
        a.tick_params(axis="x", labelsize=_FONT - 1)
        for side in ("top", "right", "left"):
            a.spines[side].set_visible(False)
    ax.set_xlim(0, right * 1.02)
    unit = _byte_ticks(ax, 0, right * 1.02)
    fig.canvas.draw()  # transforms known: label widths can be measured
    done: set[str] = set()
    listed = _draw_level_boxes(
        ax, levels, pads, 0, right + 1, renderer, prefix="", label_pad=zoom is None, labelled=done
    )
    _capacity_marks(ax, struct.size, capacity, n - 0.42, prefix="")
    ax.set_xlabel(
        f"{unit} from the start of the struct" + (" (1 KiB = 1024 B)" if unit == "KiB" else ""), fontsize=_FONT
    )
    if zoom:
        lo, hi = zoom
        if capacity is not None and lo < capacity and abs(capacity - struct.size) <= 0.5 * (hi - lo):
            hi = max(hi, capacity, struct.size)  # the headroom or the overshoot, when it is small
            lo = min(lo, capacity)
        span = hi - lo
        zlo, zhi = lo - span * 0.02, hi + span * 0.02
        zax.set_xlim(zlo, zhi)
        zunit = _byte_ticks(zax, zlo, zhi)
        fig.canvas.draw()
        listed = _draw_level_boxes(zax, levels, pads, lo, hi + 1, renderer, prefix="zoom:", labelled=done)
        _capacity_marks(
            zax,
            struct.size,
            capacity,
            n - 0.42,
            prefix="zoom:",
            label=zlo <= struct.size <= zhi and (capacity is None or zlo <= capacity <= zhi),
        )
        zax.set_xlabel(f"bytes {lo} to {hi}, zoomed" + (", ticks in KiB" if zunit == "KiB" else ""), fontsize=_FONT)
        from matplotlib.patches import ConnectionPatch, Rectangle

        ax.add_patch(
            Rectangle(
                (lo, -0.5),
                hi - lo,
                n - 0.05,
                fill=False,
                edgecolor="#444444",
                linewidth=0.8,
                linestyle="-",
                gid="zoom-region",
            )
        )
        for x in (lo, hi):
            fig.add_artist(
                ConnectionPatch(
                    (x, -0.5), (x, n - 0.45), "data", "data", axesA=ax, axesB=zax, color="#888888", linewidth=0.6
                )
            )
    handles = [
        Patch(facecolor=c, edgecolor="black", linewidth=0.6, label=f"{dotted}  {f.size} B @ {f.offset}")
        for f, dotted, c in listed
    ]
    handles.append(Patch(facecolor=_PAD_COLOR, hatch="////", edgecolor="#8a8a8a", label="padding"))
    if capacity is not None:
        over = struct.size > capacity
        handles.append(
            Patch(
                facecolor=_CAP_COLOR if over else VERDICT_COLORS[Verdict.FITS],
                alpha=0.2,
                label=(
                    f"over capacity by {struct.size - capacity} B" if over else f"headroom {capacity - struct.size} B"
                ),
            )
        )
    (zax or ax).legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.005, 1.0),
        fontsize=_FONT - 1,
        frameon=False,
        title="small members (bytes @ offset)" if listed else None,
        title_fontsize=_FONT - 1,
    )
    if title:
        fig.suptitle(title, fontsize=_FONT + 1, x=0.01, ha="left")
    return fig


def _byte_ticks(ax, lo: float, hi: float) -> str:
    """Put a :func:`_byte_locator` on ``ax``'s x axis for the byte range [lo, hi]; returns
    the unit its labels are in: ``KiB`` (1024 B) when the range is 16 KiB or more, else
    ``bytes``."""
    from matplotlib.ticker import FuncFormatter

    kib = hi - lo >= 16 * 1024
    ax.xaxis.set_major_locator(_byte_locator(kib))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: _tick_text(x, kib)))
    return "KiB" if kib else "bytes"


def _tick_text(x: float, kib: bool) -> str:
    return f"{round(x / 1024) if kib else round(x)}"


def _byte_locator(kib: bool, size: float = _FONT - 1):
    """A matplotlib Locator: ticks at multiples of a power of two bytes (of KiB with ``kib``),
    the smallest step whose labels, measured at the tick font ``size`` (points), leave a gap of at least
    one font size between neighbours at the axis' width when it is drawn (so at any figure
    size), and at most 11 ticks. Where even one step over the range is too wide, one tick."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path
    from matplotlib.axis import Axis
    from matplotlib.ticker import Locator

    class ByteLocator(Locator):
        def __call__(self):
            assert self.axis is not None  # a locator is called on its axis
            lo, hi = sorted(self.axis.get_view_interval())
            return self.tick_values(lo, hi)

        def tick_values(self, vmin, vmax):
            assert isinstance(self.axis, Axis)  # set on the figure's x axis
            ax = self.axis.axes
            px_per_byte = ax.bbox.width / max(vmax - vmin, 1e-9)
            points_to_px = ax.figure.dpi / 72
            prop = FontProperties(size=size)
            step = 1024 if kib else 1
            while (vmax - vmin) / step > 11:  # at most 11 ticks: start there
                step *= 2
            while True:
                first = -(-vmin // step) * step
                ticks = [first + i * step for i in range(int((vmax - first) // step) + 1)]
                widths = [
                    text_to_path.get_text_width_height_descent(_tick_text(t, kib), prop, ismath=False)[0] * points_to_px
                    for t in ticks
                ]
                gap = size * points_to_px
                if len(ticks) <= 1 or (
                    len(ticks) <= 11
                    and all(step * px_per_byte >= (a + b) / 2 + gap for a, b in zip(widths, widths[1:]))
                ):
                    return ticks
                step *= 2

    return ByteLocator()


def _title(cfg: dict, tile_bytes: bool = False) -> str:
    from ..subjects.config import tile_text

    t = tile_text(cfg.get("tile", []), cfg.get("a"), tile_bytes) if cfg.get("tile") else "?"
    return (
        f"{cfg.get('arch')} {cfg.get('kernel')} {cfg.get('a')} x {cfg.get('b')}, tile {t}, "
        f"stages {cfg.get('stages')}, {cfg.get('preset')}"
    )


def _verdict_words(size: int, capacity: int | None, stages) -> str:
    if capacity is None:
        return f"{stages} stages, {size} B"
    if size > capacity:
        how = f"over capacity by {size - capacity} B"
    elif size == capacity:
        how = "exact fit (headroom 0)"
    else:
        how = f"fits, headroom {capacity - size} B"
    return f"{stages} stages, {size} B of {capacity} B: {how}"


def plot_layout(report, path=None, *, depth: int = 2, tile_bytes: bool = False):
    """Memory map of a :class:`~cutlass_layout.model.LayoutReport`'s kernel SharedStorage
    (for ``layout --plot FILE``), titled with the source as the user named it and the
    config (tile K in bytes with ``tile_bytes``).

    Args:
        report: the layout report.
        path: ``.svg`` or ``.png`` file to write, or ``None`` to only return the Figure.
        depth: member levels drawn (1 or 2).

    Returns:
        The Figure (see :func:`memory_map`).

    Raises:
        DoesNotCompile: the report's config does not compile (nothing to draw).
        BadInput: a bad file name, matplotlib missing, or the file cannot be written.
    """
    from .common import source_name

    if report.error is not None:
        raise DoesNotCompile(report.error)
    struct = report.kernel or getattr(report, "subject", None)
    assert struct is not None  # compiled: it has a kernel or a subject
    cfg = report.config
    what = (
        f"tactic {cfg['tactic']}"
        if "tactic" in cfg
        else f"{cfg['type']} ({cfg.get('arch')})"
        if "type" in cfg
        else _title(cfg, tile_bytes)
    )
    p = report.provenance
    title = (
        f"{source_name(p.origin, p.cutlass_version)}: kernel SharedStorage\n{what}: "
        f"{_verdict_words(struct.size, report.capacity_bytes, report.stages)}"
    )
    fig = memory_map(struct, report.capacity_bytes, title=title, depth=depth)
    _save(fig, path)
    return fig


def sweep_chart(records, *, title: str | None = None, tile_bytes: bool = False):
    """Bars of kernel bytes per config against the capacity line, colored by verdict.

    Args:
        records: :class:`~cutlass_layout.model.SweepRecord` objects, drawn in order.
        title: the figure's title (a line per ``\\n``).
        tile_bytes: tiles labelled with K in bytes of A's element (``128x256x64B``).

    Returns:
        The Figure: one bar per record (``gid`` ``bar:<i>``; a config that does not compile
        is a hatched grey column of no bytes, height 0, labelled ``does not compile``), an
        exact fit in its own color; the stage count over each bar; x labels from the tile and
        the keys that vary; the ``capacity`` line, labelled ``capacity N B`` to the right of
        the bars; a dot (``max:<i>``) at the kernel bytes of the largest stage count that fits
        where it differs from the bar. The y axis spans the band from a little below the
        smallest kernel (or 75% of the capacity) to above the largest; where it does not
        start at 0 the axis says so. A bar more than 35% over the capacity is cut at the top
        of the axis and its bytes are written on it (``cut:<i>``).
    """
    from matplotlib.transforms import blended_transform_factory  # first, as it always was

    Figure, Patch = _matplotlib()
    records = list(records)
    n = len(records)
    labels = _sweep_labels(records, tile_bytes)
    longest = max((len(t) for t in labels), default=0)
    fig = Figure(figsize=(max(7.0, 0.42 * n + 3.2), 4.4 + 0.06 * longest), layout="constrained")
    ax = fig.add_subplot()
    caps = [r.capacity_bytes for r in records if r.capacity_bytes]
    # one capacity, or (a sweep over arches) the largest sets the band, each bar gets its own
    cap = max(caps) if caps else None
    ymin, ymax = _y_band(records, cap)
    verdicts = _draw_bars(ax, records, ymin, ymax)
    _draw_capacity(ax, records, caps, cap, blended_transform_factory)
    _style_axes(ax, labels, n, ymin, ymax)
    _legend(ax, records, verdicts, Patch)
    if title:
        fig.suptitle(title, fontsize=_FONT + 1, x=0.01, ha="left")
    return fig


def _sweep_labels(records: list, tile_bytes: bool) -> list[str]:
    """Each bar's x label: its tile and the keys that vary (C and D types included where
    they differ, as between presets: ``128x128x128 trtllm-moe C=bf16``), with its stage count
    asked for where those vary too."""
    from .sweep import config_label, varying_keys

    cfgs = [r.config.to_dict() for r in records]
    var = varying_keys(cfgs)
    # C/D the preset decides are left out of ``var``; where they still differ between bars
    # (a sweep over presets), each bar names its own
    var += [
        k
        for k in ("c", "d")
        if k not in var and not any("type" in c for c in cfgs) and len({str(c.get(k)) for c in cfgs}) > 1
    ]
    labels = [config_label(c, var, tile_bytes) for c in cfgs]
    if len({str(c.get("stages")) for c in cfgs}) > 1:  # the stage counts asked for vary too
        labels = [
            f"{t} {'auto' if c.get('stages') in ('auto', None) else str(c['stages']) + ' st'}"
            for t, c in zip(labels, cfgs)
        ]
    return labels


def _y_band(records: list, cap: int | None) -> tuple[int, float]:
    """``(ymin, ymax)``: from a round number a little below the smallest kernel (or 75% of the
    capacity ``cap``) to above the largest, outliers more than 35% over the capacity left
    out (their bars are cut)."""
    sizes = [r.kernel_bytes for r in records if r.kernel_bytes] + [
        r.max_stages_kernel_bytes for r in records if r.max_stages_kernel_bytes
    ]
    top = max(sizes + [cap or 0, 1])
    low = min(sizes + ([int(cap * 0.75)] if cap else [])) if sizes or cap else 0
    step = 5000  # a round number, where the axis starts
    ymin = max(0, (int(low * 0.96) // step) * step)
    if cap is not None and top > cap * 1.35:  # outliers: the band stays readable, they are cut
        top = max([x for x in sizes if x <= cap * 1.35] + [cap])
    ymax = top + (top - ymin) * 0.12
    return ymin, ymax


def _draw_bars(ax, records: list, ymin: int, ymax: float) -> list[str]:
    """One bar per record (see :func:`sweep_chart`), its stage count over it and the dot of
    the largest stage count that fits; returns each bar's verdict (``exact_fit`` its own)."""
    verdicts = []
    for i, r in enumerate(records):
        v = r.verdict
        verdicts.append(v)
        if v == Verdict.DOES_NOT_COMPILE:
            ax.bar(i, 0, bottom=ymin, color=VERDICT_COLORS[v], gid=f"bar:{i}")
            ax.bar(
                i,
                ymax - ymin,
                bottom=ymin,
                color=VERDICT_COLORS[v],
                edgecolor="#777777",
                hatch="xx",
                linewidth=0.5,
                alpha=0.55,
                gid=f"ncbar:{i}",
            )
            ax.text(
                i,
                ymin + (ymax - ymin) * 0.03,
                "does not compile",
                ha="center",
                va="bottom",
                rotation=90,
                fontsize=_FONT - 1,
                color="#333333",
            )
            continue
        h = r.kernel_bytes or 0
        ax.bar(
            i,
            h,
            color=VERDICT_COLORS[v],
            edgecolor="black",
            linewidth=0.6,
            gid=f"bar:{i}",
            hatch="//" if v == Verdict.EXACT_FIT else None,
        )
        if h > ymax:  # cut at the top of the axis: its bytes written on it
            ax.text(
                i,
                ymax - (ymax - ymin) * 0.02,
                f"{r.stages} st, {h} B \u2191",
                ha="center",
                va="top",
                rotation=90,
                fontsize=_FONT - 1,
                color="white",
                gid=f"cut:{i}",
            )
        else:
            ax.text(i, h + (ymax - ymin) * 0.01, str(r.stages), ha="center", va="bottom", fontsize=_FONT - 1)
        if r.max_stages_kernel_bytes is not None and r.max_stages_kernel_bytes != r.kernel_bytes:
            y = min(r.max_stages_kernel_bytes, ymax)  # above the axis: on its top edge, as ^
            ax.plot(
                [i],
                [y],
                marker="o" if y == r.max_stages_kernel_bytes else "^",
                color="black",
                markersize=5,
                linestyle="none",
                gid=f"max:{i}",
                clip_on=False,
            )
            ax.text(
                i + 0.22,
                y,
                str(r.max_stages_that_fit)
                if y == r.max_stages_kernel_bytes
                else f"{r.max_stages_that_fit} ({r.max_stages_kernel_bytes} B)",
                ha="left",
                va="center",
                fontsize=_FONT - 2,
            )
    return verdicts


def _draw_capacity(ax, records: list, caps: list[int], cap: int | None, blended_transform_factory) -> None:
    """The capacity line labelled to the right of the bars: one across the chart, or (records
    of several capacities) one per bar, each capacity labelled with its arches
    (``blended_transform_factory``: matplotlib's, x in axes and y in data coordinates)."""
    if len(set(caps)) > 1:
        tr = blended_transform_factory(ax.transAxes, ax.transData)
        for i, r in enumerate(records):
            if r.capacity_bytes:
                # white beneath: the dashes stay visible across a red (over capacity) bar
                ax.hlines(r.capacity_bytes, i - 0.5, i + 0.5, color="white", linewidth=3.5, zorder=3)
                ax.hlines(
                    r.capacity_bytes,
                    i - 0.5,
                    i + 0.5,
                    color=_CAP_COLOR,
                    linestyle="--",
                    linewidth=1.5,
                    gid=f"capacity:{i}",
                    zorder=4,
                )
        for c in sorted(set(caps)):
            archs_ = sorted(
                {str(getattr(r, "arch_from_tag", None) or r.config.arch) for r in records if r.capacity_bytes == c}
            )
            ax.text(
                1.01,
                c,
                f"capacity {c} B ({', '.join(archs_)})",
                transform=tr,
                color=_CAP_COLOR,
                ha="left",
                va="center",
                fontsize=_FONT,
                gid=f"capacity-label:{c}",
                clip_on=False,
            )
    elif cap is not None:
        ax.axhline(cap, color=_CAP_COLOR, linestyle="--", linewidth=1.5, gid="capacity")
        tr = blended_transform_factory(ax.transAxes, ax.transData)
        ax.text(
            1.01,
            cap,
            f"capacity {cap} B",
            transform=tr,
            color=_CAP_COLOR,
            ha="left",
            va="center",
            fontsize=_FONT,
            gid="capacity-label",
            clip_on=False,
        )


def _style_axes(ax, labels: list[str], n: int, ymin: int, ymax: float) -> None:
    """The x labels, the limits, the y axis in whole bytes, its label (and a break mark at its
    foot where it does not start at 0), no top or right spine."""
    from matplotlib.ticker import StrMethodFormatter

    ax.set_xticks(range(n), labels, rotation=45, ha="right", rotation_mode="anchor", fontsize=_FONT)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(ymin, ymax)
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:.0f}"))
    ax.tick_params(axis="y", labelsize=_FONT)
    ylabel = "kernel SharedStorage, bytes"
    if ymin > 0:
        ylabel += f"\n(axis from {ymin} B, not 0)"
        # a break mark at the foot of the axis: the bars continue below it
        kw = dict(transform=ax.transAxes, color="black", clip_on=False, linewidth=0.8)
        for y in (0.0, 0.022):
            ax.plot([-0.014, 0.014], [y - 0.01, y + 0.01], **kw)
    ax.set_ylabel(ylabel, fontsize=_FONT)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _legend(ax, records: list, verdicts: list[str], Patch) -> None:
    """The legend above the axes: the verdicts drawn, and the dot of the largest stage count
    that fits where one is drawn."""
    handles = [
        Patch(
            facecolor=VERDICT_COLORS[v],
            edgecolor="black",
            linewidth=0.6,
            hatch={Verdict.EXACT_FIT: "//", Verdict.DOES_NOT_COMPILE: "xx"}.get(v),
            label=VERDICT_LABELS[v],
        )
        for v in VERDICT_COLORS
        if v in verdicts
    ]
    if any(r.max_stages_kernel_bytes is not None and r.max_stages_kernel_bytes != r.kernel_bytes for r in records):
        from matplotlib.lines import Line2D

        handles.append(
            Line2D(
                [],
                [],
                marker="o",
                color="black",
                linestyle="none",
                markersize=5,
                label="largest stage count that fits (its number beside)",
            )
        )
    ax.legend(
        handles=handles,
        fontsize=_FONT - 1,
        loc="lower left",
        bbox_to_anchor=(0, 1.0),
        ncols=min(len(handles), 3),
        frameon=False,
        title="number over a bar: its stages",
        title_fontsize=_FONT - 1,
        alignment="left",
    )


def plot_sweep_result(result, path=None, *, tile_bytes: bool = False):
    """Draw a :class:`~cutlass_layout.model.SweepResult`: the memory map when it is one
    config that compiled, else the bar chart; titled with the source as the user named it
    (``flashinfer-python 0.7.2.post1 (CUTLASS 4.5.0)``) and what the configs share. Writes
    ``path`` (``.svg``/``.png``) when given; returns the Figure. Raises :class:`BadInput` on
    a bad file name."""
    from .common import source_name
    from .sweep import varying_keys

    recs = result.records
    p = result.provenance
    src = source_name(p.origin, p.cutlass_version)
    if len(recs) == 1 and recs[0].kernel_layout is not None:
        r = recs[0]
        cfg = r.config.to_dict()
        what = f"{cfg['type']} ({cfg.get('arch')})" if "type" in cfg else _title(cfg, tile_bytes)
        title = f"{src}: kernel SharedStorage\n{what}: {_verdict_words(r.kernel_bytes, r.capacity_bytes, r.stages)}"
        fig = memory_map(r.kernel_layout, r.capacity_bytes, title=title)
    else:
        cfgs = [r.config.to_dict() for r in recs]
        var = set(varying_keys(cfgs)) | {"tile", "stages"}
        shared = []
        for k in ("arch", "kernel", "a", "b", "preset", "c", "d", "stages"):
            # only what every config has (presets of different C types: C is on each bar)
            if k not in var and cfgs and cfgs[0].get(k) is not None and len({str(c.get(k)) for c in cfgs}) == 1:
                shared.append(f"{k} {cfgs[0][k]}" if k not in ("a", "b", "c", "d") else f"{k.upper()} {cfgs[0][k]}")
        sub = ", ".join(shared)
        fig = sweep_chart(
            recs, title=f"{src}: kernel SharedStorage per config" + (f"\n{sub}" if sub else ""), tile_bytes=tile_bytes
        )
    _save(fig, path)
    return fig


__all__ = ["DPI", "MISSING", "check_plot_path", "memory_map", "plot_layout", "plot_sweep_result", "sweep_chart"]
