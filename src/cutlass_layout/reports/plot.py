"""Pictures (matplotlib, no display needed): a kernel's SharedStorage as a memory map, and a
sweep's kernel bytes against the capacity.

Every function returns the :class:`matplotlib.figure.Figure` it drew (tests and callers can
inspect it) and writes it when given a path (``.svg`` or ``.png``). Figures are built
without pyplot, so no GUI backend or global state is involved (matplotlib is a dependency).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import BadInput, DoesNotCompile

FORMATS = (".svg", ".png")
VERDICT_COLORS = {"fits": "#4c9a2a", "over_capacity": "#c0392b", "does_not_compile": "#9e9e9e"}
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
            "#9c755f", "#bab0ac", "#e15759")
_PAD_COLOR = "#dddddd"
_CAP_COLOR = "#c0392b"


def _matplotlib():
    try:
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError:
        raise BadInput("plots need matplotlib: pip install matplotlib") from None
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
        with rc_context({"svg.fonttype": "none"}):
            fig.savefig(p, format=p.suffix.lower()[1:], bbox_inches="tight")
    except OSError as exc:
        raise BadInput(f"cannot write plot file {p}: {exc.strerror or exc}") from None


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


def memory_map(struct, capacity: int | None = None, *, title: str | None = None, depth: int = 2):
    """Draw a SharedStorage as boxes along its bytes.

    Args:
        struct: a :class:`~cutlass_layout.model.StructLayout` (offsets and sizes in bytes).
        capacity: bytes per block; drawn as a vertical line labelled ``capacity N B``.
        title: the axes title.
        depth: 1 = top-level members only; 2 = also their members, in a second row.

    Returns:
        The Figure. Each member box is a patch with ``gid`` ``member:<dotted name>`` and
        its label: a text ``<name>\\n<size> B`` inside the box, or, for a box too narrow
        for it, a legend entry ``<dotted name>  <size> B @ <offset>``; padding (gaps between members and tail padding) is a
        hatched grey patch with ``gid`` ``padding``; the capacity line has ``gid``
        ``capacity``.
    """
    Figure, Patch = _matplotlib()
    fig = Figure(figsize=(11, 2.2 + 1.1 * depth))
    ax = fig.add_subplot()
    right = max(struct.size, capacity or 0)
    xmax = right * 1.04
    levels = []  # (y, members, prefix) per level
    y_top = depth - 1
    level = [(f, f.name) for f in struct.fields]
    listed = []  # legend entries for boxes too narrow to hold their label
    for d in range(depth):
        y = y_top - d
        height = 0.8 if d == 0 else 0.6
        for i, (f, dotted) in enumerate(level):
            color = _PALETTE[(i + 3 * d) % len(_PALETTE)]
            ax.barh(y, f.size, left=f.offset, height=height, color=color, edgecolor="black",
                    linewidth=0.6, gid=f"member:{dotted}")
            if f.size >= right * 0.07:
                ax.text(f.offset + f.size / 2, y, f"{f.name}\n{f.size} B", ha="center",
                        va="center", fontsize=8, gid=f"label:{dotted}")
            else:  # too narrow: listed beside the plot, same color
                listed.append(Patch(facecolor=color, edgecolor="black", linewidth=0.6,
                                    label=f"{dotted}  {f.size} B @ {f.offset}"))
        # padding in this level: gaps inside each parent (the struct for level 0)
        parents = [(struct.fields, 0, struct.size)] if d == 0 else [
            (p.fields, p.offset, p.offset + p.size) for p, _ in levels[-1] if p.fields]
        for fields, start, end in parents:
            for off, size in _gaps(fields, start, end):
                ax.barh(y, size, left=off, height=height, color=_PAD_COLOR, hatch="////",
                        edgecolor="#888888", linewidth=0.4, gid="padding")
                if size >= right * 0.04:
                    ax.text(off + size / 2, y - height / 2 - 0.05, f"pad {size}", ha="center",
                            va="top", fontsize=6, color="#555555")
        levels.append(level)
        level = [(c, f"{dotted}.{c.name}") for f, dotted in level for c in f.fields]
        if not level:
            break
    ax.axvline(struct.size, color="black", linewidth=0.8, linestyle=":", gid="sizeof")
    if capacity is not None:
        ax.axvline(capacity, color=_CAP_COLOR, linewidth=1.5, linestyle="--", gid="capacity")
        ax.text(capacity, -0.75, f"capacity {capacity} B", color=_CAP_COLOR,
                ha="right" if capacity >= struct.size else "left", va="center", fontsize=8,
                gid="capacity-label")
    ax.text(struct.size, y_top + 0.95, f"sizeof {struct.size} B",
            ha="right", va="top", fontsize=8)
    ax.set_xlim(0, xmax)
    ax.set_ylim(-1.0, y_top + 1.3)
    ax.set_yticks([y_top - d for d in range(len(levels))],
                  ["members", "their members"][: len(levels)])
    ax.set_xlabel("bytes from the start of the struct")
    handles = listed + [Patch(facecolor=_PAD_COLOR, hatch="////", edgecolor="#888888",
                              label="padding")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7,
              frameon=False, title="small members (bytes @ offset)" if listed else None,
              title_fontsize=7)
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    fig.tight_layout()
    return fig


def _title(cfg: dict) -> str:
    t = "x".join(map(str, cfg.get("tile", [])))
    return (f"{cfg.get('arch')} {cfg.get('kernel')} {cfg.get('a')} x {cfg.get('b')} tile {t} "
            f"stages {cfg.get('stages')} {cfg.get('preset')}")


def plot_layout(report, path=None, *, depth: int = 2):
    """Memory map of a :class:`~cutlass_layout.model.LayoutReport`'s kernel SharedStorage
    (for ``layout --plot FILE``).

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
    if report.error is not None:
        raise DoesNotCompile(report.error)
    struct = report.kernel or getattr(report, "subject", None)
    title = (f"{_title(report.config)}: {report.stages} stages, kernel {struct.size} B "
             f"({report.verdict.replace('_', ' ')})")
    fig = memory_map(struct, report.capacity_bytes, title=title, depth=depth)
    _save(fig, path)
    return fig


def sweep_chart(records, *, title: str | None = None):
    """Bars of kernel bytes per config against the capacity line, colored by verdict.

    Args:
        records: :class:`~cutlass_layout.model.SweepRecord` objects, drawn in order.
        title: the axes title.

    Returns:
        The Figure: one bar per record (``gid`` ``bar:<i>``, zero height for a config that
        does not compile, marked ``n/c``), x labels from the tile and the keys that vary,
        a ``capacity`` line labelled ``capacity N B``, and a dot at the kernel bytes of the
        largest stage count that fits where it differs from the bar.
    """
    from .sweep import config_label, varying_keys

    Figure, Patch = _matplotlib()
    records = list(records)
    n = len(records)
    cfgs = [r.config.to_dict() for r in records]
    var = varying_keys(cfgs)
    labels = [config_label(c, var) for c in cfgs]
    longest = max((len(t) for t in labels), default=0)
    fig = Figure(figsize=(max(6.0, 0.3 * n + 2.5), 3.5 + 0.055 * longest))
    ax = fig.add_subplot()
    caps = [r.capacity_bytes for r in records if r.capacity_bytes]
    cap = caps[0] if caps else None
    top = max([r.kernel_bytes or 0 for r in records] + [cap or 0, 1])
    for i, r in enumerate(records):
        h = r.kernel_bytes or 0
        ax.bar(i, h, color=VERDICT_COLORS[r.verdict], edgecolor="black", linewidth=0.5,
               gid=f"bar:{i}", hatch="xx" if r.verdict == "does_not_compile" else None)
        if r.verdict == "does_not_compile":
            ax.text(i, top * 0.02, "n/c", ha="center", va="bottom", fontsize=7, rotation=90)
        else:
            ax.text(i, h + top * 0.01, str(r.stages), ha="center", va="bottom", fontsize=7)
        if r.max_stages_kernel_bytes is not None and r.max_stages_kernel_bytes != r.kernel_bytes:
            ax.plot([i], [r.max_stages_kernel_bytes], marker="o", color="black", markersize=4,
                    gid=f"max:{i}")
    if cap is not None:
        ax.axhline(cap, color=_CAP_COLOR, linestyle="--", linewidth=1.5, gid="capacity")
        ax.text(n - 0.5, cap, f"capacity {cap} B", color=_CAP_COLOR, ha="right", va="bottom",
                fontsize=8, gid="capacity-label")
    ax.set_xticks(range(n), labels, rotation=60, ha="right", rotation_mode="anchor", fontsize=7)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(0, top * 1.12)
    ax.set_ylabel("kernel SharedStorage, bytes")
    handles = [Patch(facecolor=c, edgecolor="black", label=v.replace("_", " "))
               for v, c in VERDICT_COLORS.items() if any(r.verdict == v for r in records)]
    handles.append(Patch(facecolor="white", edgecolor="white", label="number: stages"))
    if any(r.max_stages_kernel_bytes is not None and r.max_stages_kernel_bytes != r.kernel_bytes
           for r in records):
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], marker="o", color="black", linestyle="none", markersize=4,
                              label="largest stage count that fits"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False)
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    fig.tight_layout()
    return fig


def plot_sweep_result(result, path=None):
    """Draw a :class:`~cutlass_layout.model.SweepResult`: the memory map when it is one
    config that compiled, else the bar chart. Writes ``path`` (``.svg``/``.png``) when
    given; returns the Figure. Raises :class:`BadInput` on a bad file name."""
    recs = result.records
    if len(recs) == 1 and recs[0].kernel_layout is not None:
        r = recs[0]
        title = (f"{_title(r.config.to_dict())}: {r.stages} stages, kernel {r.kernel_bytes} B "
                 f"({r.verdict.replace('_', ' ')})")
        fig = memory_map(r.kernel_layout, r.capacity_bytes, title=title)
    else:
        p = result.provenance
        fig = sweep_chart(recs, title=f"CUTLASS {p.cutlass_version} "
                                      f"(tree {p.tree_hash}): kernel SharedStorage per config")
    _save(fig, path)
    return fig


__all__ = ["check_plot_path", "memory_map", "plot_layout", "plot_sweep_result", "sweep_chart"]
