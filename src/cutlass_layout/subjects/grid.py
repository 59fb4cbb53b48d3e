"""Config grids: several values per flag, brace ranges, or a TOML/JSON grid file.

The grid is the product of the values given for each flag::

    --tile 128x{32,64,128,256}x{128,256} --tile 256x128x128 --a nvfp4 --stages auto --stages 3

is 9 tiles x 1 element x 2 stage choices = 18 configs. A grid file holds the same keys,
each a value or a list of values (``tile`` strings may use braces too)::

    # grid.toml
    arch = "sm120"
    kernel = ["grouped", "dense"]
    a = "nvfp4"
    tile = ["128x{32,64,128,256}x{128,256}", "256x128x128"]
    stages = ["auto", 3]
    preset = "flashinfer"

JSON: the same as one object, or ``{"grid": {...}}`` / ``{"configs": [{...}, ...]}`` where
each entry of ``configs`` is one config (no product).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

from ..errors import BadInput
from ..core.files import LIMITS, check_limit, read_file
from .config import Config, config_from_flags

#: The flags (keyword names of :func:`cutlass_layout.subjects.config.config_from_flags`) a grid may vary.
GRID_KEYS = (
    "arch",
    "kernel",
    "a",
    "b",
    "tile",
    "cluster",
    "stages",
    "c",
    "d",
    "preset",
    "schedule",
    "epilogue_schedule",
    "scales",
)

_BRACE = re.compile(r"\{([^{}]*)\}")


def expand_braces(text: str) -> list[str]:
    """Expand shell-style braces: ``128x{32,64}x{128,256}`` -> 4 strings, in order.

    ``{a..b}`` is not supported (write the values). Raises :class:`BadInput` on an
    unbalanced or empty brace.
    """
    if text.count("{") != text.count("}"):
        raise BadInput(f"unbalanced braces in {text!r}")
    n = 1
    for group in _BRACE.findall(text):
        n *= len(group.split(","))
    check_limit(n, LIMITS.grid_configs, f"the expansion of {text!r}", _configs)
    m = _BRACE.search(text)
    if not m:
        return [text]
    options = [o.strip() for o in m.group(1).split(",")]
    if not all(options):
        raise BadInput(f"empty value in braces in {text!r}")
    out = []
    for opt in options:
        out.extend(expand_braces(text[: m.start()] + opt + text[m.end() :]))
    return out


def _values(key: str, raw) -> list[str | None]:
    items = raw if isinstance(raw, (list, tuple)) else [raw]
    out: list[str | None] = []
    for item in items:
        if item is None:
            out.append(None)
            continue
        for v in expand_braces(str(item)):
            out.append(v)
    if not out:
        raise BadInput(f"grid key {key!r} has no values")
    return out


def _configs(n: int) -> str:
    return f"{n} config{'s' if n != 1 else ''}"


def check_size(n: int) -> None:
    """Refuse a grid of ``n`` configs over :data:`~cutlass_layout.core.files.LIMITS`'s
    ``grid_configs`` (:class:`~cutlass_layout.core.files.OverLimit`)."""
    check_limit(n, LIMITS.grid_configs, "the grid", _configs)


def grid_configs(values: dict) -> list[Config]:
    """Configs of the product of ``values`` (key -> one value or a list; see :data:`GRID_KEYS`).

    Keys left out take the ``layout`` defaults. Duplicates are dropped, order kept.

    Raises:
        BadInput: an unknown key or a bad value (the first one found).
        OverLimit: more configs than :data:`~cutlass_layout.core.files.LIMITS` allows.
    """
    unknown = sorted(set(values) - set(GRID_KEYS))
    if unknown:
        raise BadInput(f"unknown grid key {unknown[0]!r}: use {', '.join(GRID_KEYS)}")
    keys = [k for k in GRID_KEYS if k in values and values[k] is not None]
    axes = [_values(k, values[k]) for k in keys]
    check_size(math.prod(len(a) for a in axes))
    seen, out = set(), []
    for combo in itertools.product(*axes):
        kwargs = {k: v for k, v in zip(keys, combo) if v is not None}
        cfg = config_from_flags(**kwargs)
        if cfg not in seen:
            seen.add(cfg)
            out.append(cfg)
    return out


def load_grid_file(path: str | Path) -> list[Config]:
    """Configs from a TOML (``.toml``) or JSON grid file (see the module docstring).

    Raises:
        BadInput: missing or unreadable file, bad syntax, unknown keys or bad values.
    """
    p = Path(path)
    try:
        text = read_file(p, what="grid file").decode()
    except UnicodeDecodeError:
        raise BadInput(f"grid file {p} is not text") from None
    try:
        if p.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # tomllib.TOMLDecodeError, json.JSONDecodeError
        raise BadInput(f"grid file {p}: {exc}") from None
    if not isinstance(data, dict):
        raise BadInput(f"grid file {p}: expected a table/object of grid keys")
    if not data or data == {"grid": {}}:
        raise BadInput(
            f"grid file {p} is empty: it names no grid key ({', '.join(GRID_KEYS)}), so there is nothing to lay out"
        )
    if "configs" in data:
        entries = data["configs"]
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise BadInput(f"grid file {p}: 'configs' must be a list of objects")
        out = []
        for e in entries:
            out.extend(grid_configs(e))
            check_size(len(out))
        return out
    return grid_configs(data.get("grid", data))
