"""``audit <CUTLASS kernel library> --exclude-list FILE``: the kernels a CUTLASS build should leave
out (over capacity, or not compiling), in the form CUTLASS's build takes.

CUTLASS's CMake passes ``CUTLASS_LIBRARY_EXCLUDE_KERNELS`` (a comma-delimited string, "always takes
effect, whether or not CUTLASS_LIBRARY_KERNELS is set": ``CMakeLists.txt``) to the library's
generator as ``--exclude-kernels`` (``tools/library/CMakeLists.txt``). Its ``Manifest.filter``
(``python/cutlass_library/manifest.py``) drops a kernel when one of those filter strings matches
its procedural name: ``_filter_string_matches`` splits the string at ``*`` and finds each part
in the name, in order (a substring, not the whole name). A kernel's full procedural name as the
filter string therefore drops that kernel, and any other kernel whose name contains it
(nvidia-cutlass 4.2.0.0's SM90 set has 172 names inside longer ones:
``..._1x2x1_0_nnn_align8`` in ``..._1x2x1_0_nnn_align8_warpspecialized...``): no filter string
can tell those apart, so such kernels are named in the file's header and in a note.

The file is a CMake initial-cache script (``cmake -C FILE``): ``#`` comment lines saying what it
is for (the library's version and origin, the arch and its ``--architectures``; no date), then
``set(CUTLASS_LIBRARY_EXCLUDE_KERNELS "NAME,NAME,..." CACHE STRING "...")``; the quoted value is
what ``-DCUTLASS_LIBRARY_EXCLUDE_KERNELS=`` or the generator's ``--exclude-kernels`` take.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.files import output_path
from ..errors import BadInput
from ..model import AuditResult
from ..model.verdict import Verdict

#: The CMake cache variable the list is written to (CUTLASS's ``CMakeLists.txt``).
VARIABLE = "CUTLASS_LIBRARY_EXCLUDE_KERNELS"
#: What the list holds, by verdict.
LEFT_OUT = (Verdict.OVER_CAPACITY, Verdict.DOES_NOT_COMPILE)
#: A run-dependent tail of an origin (``(wheel X, cached)``, ``(cloned into the cache)``), left out
#: of the header so that the same audit writes the same file.
_RUN_TAIL = re.compile(r" \((?:wheel [^()]*, )?(?:cached|downloaded into the cache|cloned into the cache)\)$")


@dataclass(frozen=True)
class ExcludeList:
    """An exclude list and what it does.

    Attributes:
        names: the procedural names of the kernels to leave out, in the audit's order.
        text: the file (module docstring).
        also_dropped: ``{kernel the audit keeps: the listed name inside its name}``: kernels the
            filter drops too (empty where the list is exact).
        counts: ``{verdict: how many of names}``.
    """

    names: list[str]
    text: str
    also_dropped: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def _matches(filter_string: str, name: str) -> bool:
    """``Manifest._filter_string_matches`` (``manifest.py``): every ``*``-separated part of
    ``filter_string`` in ``name``, in order."""
    for part in filter_string.split("*"):
        i = name.find(part)
        if i < 0:
            return False
        name = name[i + len(part) :]
    return True


def exclude_list(result: AuditResult) -> ExcludeList:
    """The exclude list of an audit of CUTLASS's kernel library (module docstring): its kernels
    over capacity or not compiling.

    Raises:
        BadInput: ``result`` is not an audit of CUTLASS's kernel library (a flashinfer install's
            tactics are not the library's kernels: its blocklist is ``--blocklist``).
    """
    prov = result.provenance or {}
    if prov.get("library") != "cutlass_library":
        raise BadInput(
            "--exclude-list writes CUTLASS_LIBRARY_EXCLUDE_KERNELS for CUTLASS's kernel library "
            "(nvidia-cutlass==VERSION, a CUTLASS checkout): for a flashinfer install, --blocklist"
        )
    left = [t for t in result.tactics if t.verdict in LEFT_OUT]
    names = list(dict.fromkeys(t.id for t in left))
    listed = set(names)
    also = {}
    for t in result.tactics:
        if t.id not in listed:
            hit = next((n for n in names if _matches(n, t.id)), None)
            if hit is not None:
                also[t.id] = hit
    counts = {v.value: sum(t.verdict == v for t in left) for v in LEFT_OUT}
    return ExcludeList(names=names, text=cmake_script(result, names, also, counts), also_dropped=also, counts=counts)


def cmake_script(res: AuditResult, names: list[str], also: dict[str, str], counts: dict[str, int]) -> str:
    """The exclude list's text: a CMake initial-cache script (``cmake -C FILE``) setting
    ``CUTLASS_LIBRARY_EXCLUDE_KERNELS`` to ``names``, after a comment header naming the
    library by version and origin, the arch, the counts by verdict and the kernels ``also``
    dropped (a listed name inside theirs)."""
    prov = res.provenance or {}
    origin = _RUN_TAIL.sub("", str(prov.get("origin", "")))
    head = [
        f"# {VARIABLE}: CUTLASS {prov.get('version', 'unknown')}'s kernel library ({origin}), "
        f"{res.arch} (--architectures {prov.get('architectures', '?')})",
        f"# written by cutlass-layout audit --exclude-list: {counts['over_capacity']} over capacity, "
        f"{counts['does_not_compile']} that do not compile, of {len(res.tactics)} kernels laid out",
        "# use: cmake -C THIS_FILE ... (a new build folder), or -D" + VARIABLE + "=<the quoted value>,",
        "# or cutlass_library/generator.py --exclude-kernels <the quoted value>",
    ]
    selection = {k: v for k, v in (prov.get("selection") or {}).items() if v}
    if selection:
        head.append("# the audit's selection: " + ", ".join(f"{k}={v}" for k, v in sorted(selection.items())))
    for kept, name in also.items():
        head.append(
            f"# note: also drops {kept}, which fits: its name contains {name} "
            "(Manifest.filter matches a part of the name)"
        )
    value = ",".join(names)
    return (
        "\n".join(head) + f'\nset({VARIABLE} "{value}" CACHE STRING "Kernels over capacity or not '
        f'compiling for {res.arch}")\n'
    )


def read_value(text: str) -> str:
    """The quoted value of the ``set(CUTLASS_LIBRARY_EXCLUDE_KERNELS "...")`` line of an exclude
    list (what ``--exclude-kernels`` takes).

    Raises:
        BadInput: no such line.
    """
    m = re.search(rf'^set\({VARIABLE} "([^"]*)"', text, re.M)
    if m is None:
        raise BadInput(f'no set({VARIABLE} "...") line: not an exclude list')
    return m.group(1)


def check_exclude_path(path) -> Path:
    """``path`` where an exclude list can be written: its folder exists (checked before the audit).

    Raises:
        BadInput: the folder does not exist."""
    return output_path(path, "exclude list")


def write_exclude_list(result: AuditResult, path) -> ExcludeList:
    """Write :func:`exclude_list` of ``result`` to ``path`` (a temporary file in its folder replaced
    into place: :func:`~cutlass_layout.core.cache.write_atomic`); return it.

    Raises:
        BadInput: not a library audit; the folder does not exist or cannot be written.
    """
    from ..core.cache import write_atomic

    el = exclude_list(result)
    path = check_exclude_path(path)
    try:
        write_atomic(path, el.text.encode())
    except OSError as exc:
        raise BadInput(f"cannot write the exclude list {path}: {exc.strerror or exc}") from None
    return el


__all__ = ["ExcludeList", "VARIABLE", "check_exclude_path", "exclude_list", "read_value", "write_exclude_list"]
