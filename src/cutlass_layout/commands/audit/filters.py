"""Which tactics an audit keeps: what it was asked (:func:`asked_of`), the config filters
(:func:`tactic_filter`, :func:`filter_tests`), ``grep``, a streamed row (:func:`stream_row`),
and for a filter that matched nothing, the nearest values the tactics have
(:func:`unmatched_filters`, :func:`unknown_family`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...errors import BadInput
from ...model import Tactic


def asked_of(config_values: dict, *, archs, **more) -> dict:
    """What an audit was asked, as its shards record it (:attr:`~cutlass_layout.model.AuditShard.asked`):
    ``archs`` (as asked), ``more`` (``family``, ``grep``; the library's ``selection``) and
    ``filters``: each config value given, as the list of its values as typed (text)."""
    filters = {
        k: [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
        for k, v in config_values.items()
        if v is not None and v != [] and v != ()
    }
    return {"archs": list(archs), **more, "filters": filters}


#: Config keys a tactic can be matched on (the others are not recorded per tactic).
FILTER_KEYS = ("kernel", "a", "b", "tile", "cluster", "stages", "d", "schedule")
#: Bits of an element as tactics name them (``Tactic.a``/``b``), for tiles with K in bytes.
ELEMENT_BITS = {
    "nvfp4": 4,
    "mxfp4": 4,
    "e2m1": 4,
    "mxfp6": 6,
    "mxfp6-e2m3": 6,
    "e3m2": 6,
    "e2m3": 6,
    "mxfp8": 8,
    "mxfp8-e5m2": 8,
    "e4m3": 8,
    "e5m2": 8,
    "s8": 8,
    "bf16": 16,
    "f16": 16,
    "f32": 32,
    "tf32": 32,
}


def tactic_filter(**values):
    """A predicate on :class:`~cutlass_layout.model.Tactic` from config values as ``layout``
    takes them (each a value or a list, braces expanding): a tactic is kept when, for every
    key given, it matches one of the values.

    ``kernel``, ``a``, ``b``, ``d`` (the output) compare names; ``tile`` is ``MxNxK`` (K in
    elements) or ``MxNxKB`` (K in bytes of the activation: A, or B with swap_ab, as
    TensorRT-LLM's ``CtaShape...B`` names count it), and matches a tactic's CTA tile (the
    tile enum's) or its MMA tile (:attr:`~cutlass_layout.model.Tactic.mma_tile`: a 2SM
    kernel of ``CtaShape128x64x128B`` is found by ``256x64x128B`` too, an SM103 one of
    ``CtaShape128x128x128B`` by ``128x128x384B``); ``cluster`` ``MxNxK``; ``stages`` N
    (``auto`` keeps all); ``schedule`` ``cooperative`` or ``pingpong`` (in the kernel
    schedule's name; ``auto`` keeps all).

    Raises:
        BadInput: a key that is not recorded per tactic (``c``, ``preset``,
            ``epilogue_schedule``, ``scales``; ``arch`` is the audit's own), or a value no
            tactic could match (the message lists the values accepted).
    """
    return keep_all(filter_tests(**values))


def keep_all(tests: dict) -> Callable:
    return lambda t: all(any(test(t) for _, test in vals) for vals in tests.values())


def kept_by(asked: dict) -> Callable[[Tactic], bool]:
    """Whether a tactic passes what an audit was asked (:func:`asked_of`): its ``family``,
    ``grep`` and config ``filters``, as :func:`finish_audit` applies them."""
    family, grep = asked.get("family"), (asked.get("grep") or "").lower()
    keep = keep_all(filter_tests(**asked.get("filters", {})))
    return lambda t: (family is None or t.family == family) and grep in haystack(t) and keep(t)


#: What a streamed row (:func:`stream_row`) leaves out: the runtime's candidate list is read
#: beside the parses, fixes are searched and guards read once every source is in.
STREAM_LATER = ("runtime_candidate", "fix", "runtime_guard")


def stream_row(arch: str, t: Tactic) -> dict:
    """A tactic's ``audit --format jsonl`` line as its source comes in: ``{"event": "tactic",
    "arch": ..., **its --json row}`` without :data:`STREAM_LATER` (the arch's closing line,
    the whole audit object, has them). Bytes throughout."""
    row = t.to_dict()
    for k in STREAM_LATER:
        row.pop(k, None)
    return {"event": "tactic", "arch": arch, **row}


#: Elements a tactic's output (``d``) can be: the element kinds, and ``void``.
OUTPUTS = (*ELEMENT_BITS, "void")


def filter_tests(**values) -> dict[str, list[tuple[str, Callable]]]:
    """The tests of :func:`tactic_filter`, one per value: ``{key: [(value as typed, test)]}``
    for the keys given (a tactic passes a key when it passes one of its tests). ``auto``
    (``stages``, ``schedule``) passes every tactic.

    Raises:
        BadInput: as :func:`tactic_filter`.
    """
    from ...subjects.config import KERNELS, parse_shape, parse_stages, split_tile
    from ...subjects.grid import expand_braces

    tests: dict[str, list] = {}
    for key, raw in values.items():
        if raw is None or raw == [] or raw == ():
            continue
        if key not in FILTER_KEYS:
            raise BadInput(
                f"{key!r} is not recorded for a tactic (an audit lays out the kernels "
                f"as the install builds them); match on {', '.join(FILTER_KEYS)}"
            )
        items = raw if isinstance(raw, (list, tuple)) else [raw]
        vals = [v for item in items for v in expand_braces(str(item))]
        one = tests.setdefault(key, [])
        for v in vals:
            low = v.strip().lower()
            if key == "kernel":
                if low not in KERNELS:
                    raise BadInput(f"unknown kernel {v!r}: choose {', '.join(KERNELS)}")
                one.append((v, lambda t, w=low: t.kernel == w))
            elif key in ("a", "b", "d"):
                accepted = OUTPUTS if key == "d" else tuple(ELEMENT_BITS)
                if low not in accepted:
                    raise BadInput(f"unknown element kind {v!r} for {key.upper()}: choose {', '.join(accepted)}")
                attr = "out" if key == "d" else key
                one.append((v, lambda t, w=low, a=attr: getattr(t, a) == w))
            elif key == "tile":
                one.append((v, lambda t, x=split_tile(v): _tile_matches(t, x)))
            elif key == "cluster":
                one.append(
                    (v, lambda t, w=tuple(parse_shape(v, "cluster")): t.cluster is not None and tuple(t.cluster) == w)
                )
            elif key == "stages":
                n = parse_stages(v)
                one.append((v, (lambda t: True) if n is None else (lambda t, w=n: t.stages == w)))
            elif key == "schedule":
                if low not in ("auto", "cooperative", "pingpong"):
                    raise BadInput(f"unknown schedule {v!r}: choose auto, cooperative or pingpong")
                one.append((v, lambda t, w=low: w == "auto" or w in str(t.schedule).lower()))
    return {k: v for k, v in tests.items() if v}


# ---------------------------------------------------------------------------------------
# what a filter that matched nothing could have meant


def haystack(t: Tactic) -> str:
    """What ``grep`` searches in a tactic: its id, name, launcher and file, lower case."""
    return " ".join(str(x) for x in (t.id, t.name, t.launcher, t.file)).lower()


def _similar(typed: str, values) -> list[str]:
    """``values`` (distinct, as text), the most like ``typed`` first."""
    import difflib

    low = typed.lower()
    uniq = list(dict.fromkeys(str(v) for v in values if v is not None))
    return sorted(uniq, key=lambda v: -difflib.SequenceMatcher(None, low, v.lower()).ratio())


def _tile_distance(a, b) -> float:
    from math import log2

    return sum(abs(log2(x) - log2(y)) if x > 0 and y > 0 else (0 if x == y else 16) for x, y in zip(a, b))


def _nearest_tiles(typed: str, pool: Sequence[Tactic]) -> tuple[str, list[str]]:
    """The tactics' tiles nearest ``typed`` (its numbers read either way: K in elements or in
    bytes; the CTA tile or the MMA tile), each as ``MxNxKB = MxNxK`` (K in bytes = K in
    elements, then the activation's element, whose width relates the two) where that width is
    known, and the MMA tile after it where the kernel's is another, with what makes it so (a
    2SM kernel's 2M, an Sm103 kernel's 3K), which the filter takes too:
    ``128x64x128B = 128x64x256 nvfp4 (2SM MMA 256x64x256)``,
    ``128x256x128B = 128x256x256 nvfp4 (Sm103 2SM MMA 256x256x768)``."""
    from ...subjects.config import split_tile

    m, n, k, _ = split_tile(typed)
    tiles: dict[str, float] = {}
    for t in pool:
        if not t.tile:
            continue
        bits = ELEMENT_BITS.get(str(t.b if t.swap_ab else t.a))
        d = float("inf")
        for tile in (t.tile, t.mma_tile):
            if not tile:
                continue
            tm, tn, tk = tile
            d = min(d, _tile_distance((m, n, k), (tm, tn, tk)))
            if bits and (tk * bits) % 8 == 0:
                d = min(d, _tile_distance((m, n, k), (tm, tn, tk * bits // 8)))
        tm, tn, tk = t.tile
        kb = tk * bits // 8 if bits and (tk * bits) % 8 == 0 else None
        elem = str(t.b if t.swap_ab else t.a)  # whose width turns K in bytes into elements
        text = f"{tm}x{tn}x{tk}" if kb is None else f"{tm}x{tn}x{kb}B = {tm}x{tn}x{tk} {elem}"
        if t.mma_tile:  # what makes it another: 2SM (2M), an Sm103 kernel (3K)
            why = ([f"Sm{t.sm_version}"] if t.sm_version not in (None, 100) else []) + (
                ["2SM"] if t.mma_sms == 2 else []
            )
            text += f" ({' '.join(why + ['MMA'])} {'x'.join(map(str, t.mma_tile))})"
        tiles[text] = min(d, tiles.get(text, d))
    near = sorted(tiles, key=lambda x: (tiles[x], x))[:4]
    legend = " (K in bytes = K in elements of the element named)" if any("B = " in x for x in near) else ""
    return f"nearest{legend}", near


def _grep_nearest(typed: str, pool: Sequence[Tactic]) -> tuple[str, list[str]]:
    """The ids most of ``typed`` appears in, in order (as many of its characters as possible)."""
    import difflib

    low = typed.lower()

    def score(i: str) -> float:
        blocks = difflib.SequenceMatcher(None, low, i.lower(), autojunk=False).get_matching_blocks()
        return sum(b.size for b in blocks) / max(1, len(low))

    ids = sorted(dict.fromkeys(t.id for t in pool), key=lambda i: (-score(i), len(i), i))
    return "nearest ids", ids[:3]


def _nearest(key: str, typed: str, pool: Sequence[Tactic]) -> tuple[str, list[str]]:
    """What tactics of ``pool`` have for ``key``, the nearest to ``typed`` first: (what they
    are, the values)."""
    if key == "tile":
        return _nearest_tiles(typed, pool)
    if key == "grep":
        return _grep_nearest(typed, pool)
    if key == "stages":
        have = sorted({t.stages for t in pool if t.stages})
        want = int(typed)
        return "the tactics have", [str(n) for n in sorted(have, key=lambda s: (abs(s - want), s))]
    get = {
        "kernel": lambda t: t.kernel,
        "a": lambda t: t.a,
        "b": lambda t: t.b,
        "d": lambda t: t.out,
        "schedule": lambda t: t.schedule,
        "cluster": lambda t: None if t.cluster is None else "x".join(map(str, t.cluster)),
    }[key]
    have = _similar(typed, (get(t) for t in pool))
    return ("the tactics have" if have else f"no tactic records a {key}"), have[:6]


def unmatched_filters(pool: Sequence[Tactic], grep: str | None, tests: dict) -> list[dict]:
    """The filters that keep none of ``pool`` (the tactics of the family asked for): ``grep``,
    and each value of each config key, alone; or, when each matches some, the filters
    together. One entry per filter (see :attr:`~cutlass_layout.model.AuditResult.unmatched`):
    ``{"filter": key, "value": as typed, "nearest": what the tactics have nearest it,
    "detail": what is wrong, "note": one line naming the filter, with the detail}``. An
    empty list for an empty pool (there is nothing to match)."""
    out = []

    def miss(key, value, what):
        shown = repr(value) if key == "grep" else value
        phrase, near = _nearest(key, value, pool)
        what = f"{what}; {phrase}" + (f": {', '.join(near)}" if near else "")
        out.append({"filter": key, "value": value, "nearest": near, "detail": what, "note": f"{key} {shown}: {what}"})

    if not pool:
        return out
    if grep is not None and not any(grep.lower() in haystack(t) for t in pool):
        miss("grep", grep, "matched no tactic's id, name, launcher or file")
    for key, vals in tests.items():
        for value, test in vals:
            if not any(test(t) for t in pool):
                miss(key, value, "matched no tactic")
    if not out and (grep is not None or tests):
        keep = keep_all(tests)
        if not any(keep(t) and (grep is None or grep.lower() in haystack(t)) for t in pool):
            given = [f"grep {grep!r}"] if grep is not None else []
            given += [f"{k} {' or '.join(v for v, _ in vals)}" for k, vals in tests.items()]
            what = f"each matches some tactic, no tactic matches them all ({'; '.join(given)})"
            out.append({"filter": None, "value": None, "nearest": [], "detail": what, "note": f"the filters: {what}"})
    return out


def tile_spelling_notes(pool: Sequence[Tactic], tests: dict) -> list[str]:
    """A note for each ``tile`` value with K in bytes (``MxNxKB``) that TensorRT-LLM's tile
    names spell for other tactics than the filter keeps: the filter's ``B`` counts bytes of
    the activation (:func:`tactic_filter`), while a name's ``CtaShape{M}x{N}x{K}B`` does not
    always (SM90 mixed-input MoE: ``CtaShape128x128x512B`` is a CTA tile of K 512 elements
    of a bf16 activation, 1024 bytes). The note names how many tactics are so named and the
    ``--tile`` (K in elements) that keeps them; the filter's meaning is unchanged."""
    from ...subjects.config import split_tile

    notes = []
    for value, _ in tests.get("tile", []):
        typed = split_tile(value)
        m, n, k, in_bytes = typed
        if not in_bytes:
            continue
        spelled = f"CtaShape{m}x{n}x{k}B"
        named = {id(t): str(t.name or "").split("_")[0] for t in pool}  # the tile enum a name starts with
        other = [t for t in pool if named[id(t)] == spelled and not _tile_matches(t, typed)]
        if not other:
            continue
        tiles = sorted({"x".join(map(str, t.tile)) for t in other if t.tile})
        kept = [t for t in pool if named[id(t)] != spelled and _tile_matches(t, typed)]
        names = sorted({named[id(t)] for t in kept if t.name})
        also = f"; it keeps {len(kept)} named {' or '.join(names)}_..." if names else ""
        notes.append(
            f"tile {value}: K counts bytes of the activation; {len(other)} tactic(s) named "
            f"{spelled}_... have CTA tile {' or '.join(tiles) or 'unknown'} (K in elements) "
            f"and are not kept: for them give --tile {' --tile '.join(tiles)}{also}"
        )
    return notes


def _tile_matches(t: Tactic, typed: tuple[int, int, int, bool]) -> bool:
    """Whether ``typed`` (``split_tile``: M, N, K, K in bytes) is the tactic's CTA tile (as
    its tile enum names it) or its MMA tile (:attr:`~cutlass_layout.model.Tactic.mma_tile`:
    2M for 2SM, 3K for SM103); K in bytes counts the activation's bits (A, or B with
    swap_ab)."""
    m, n, k, in_bytes = typed
    bits = ELEMENT_BITS.get(str(t.b if t.swap_ab else t.a))
    for tile in (t.tile, t.mma_tile):
        if not tile:
            continue
        tm, tn, tk = tile
        if (m, n) != (tm, tn):
            continue
        if (k == tk) if not in_bytes else (bits is not None and k * 8 == tk * bits):
            return True
    return False


def unknown_family(family, families: list[str], version: str, arch: str) -> str:
    """The line for a family the install does not build: the nearest, then all it builds."""
    near = _similar(str(family), families)[:1]
    hint = f" (nearest: {near[0]})" if near and _similar_enough(str(family), near[0]) else ""
    return (
        f"unknown family {family!r}{hint}: flashinfer {version} builds these for {arch}: "
        f"{', '.join(families) or 'none'}"
    )


def _similar_enough(a: str, b: str) -> bool:
    import difflib

    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio() >= 0.5


__all__ = [
    "ELEMENT_BITS",
    "FILTER_KEYS",
    "OUTPUTS",
    "STREAM_LATER",
    "asked_of",
    "filter_tests",
    "haystack",
    "keep_all",
    "kept_by",
    "stream_row",
    "tactic_filter",
    "tile_spelling_notes",
    "unknown_family",
    "unmatched_filters",
]
