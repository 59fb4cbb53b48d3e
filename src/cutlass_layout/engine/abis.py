"""A 3.x kernel's ``Params`` on both host ABIs nvcc pairs with (issue 44): GCC/Clang on Linux
x86-64 and MSVC on Windows x64, for ``layout`` of one config or user type. The subject's
probe, its block completing ``Params`` (:func:`cutlass_layout.subjects.aliases.params_aliases`),
is parsed once per ABI (:func:`cutlass_layout.cpp.clang.msvc_flags` for MSVC), and
:func:`~cutlass_layout.engine.numbers.params_layout` reads each; never in an audit, a sweep or
a batch (completing every kernel's ``Params`` doubles a batch's parse CPU). ``layout
--tactic`` reads the same two from its launcher (:mod:`cutlass_layout.commands.audit.fixes`).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import BadInput
from ..model import LayoutReport, ParamsLayout
from ..subjects import aliases, probe
from ..subjects.config import Config
from .loop import Target, probe_capacities, subject_flags, parse_text, parse_arch
from .numbers import params_layout


def params_probe(tgt: Target, subject) -> str:
    """``subject``'s probe (:func:`cutlass_layout.subjects.probe.render`, ``namespace
    cl_probe_0``) with ``KernelParams`` added to its block."""
    text = probe.render([subject], capacities=probe_capacities(tgt, [subject]))
    return text + f"namespace {aliases.NAMESPACE}0 {{\n{aliases.params_aliases()}}}\n"


def read_params(tgt: Target, subject, *, msvc: bool, zc_cplusplus: bool = False) -> ParamsLayout | str:
    """``subject``'s ``Params`` on one ABI (``msvc``: MSVC x64, ``zc_cplusplus`` as
    :func:`cutlass_layout.cpp.clang.msvc_flags` takes it; else Linux x86-64), or why not (a
    str: the parse's first error, the kernel has no ``Params``)."""
    try:
        unit = parse_text(
            tgt,
            params_probe(tgt, subject),
            parse_arch(subject),
            subject_flags([subject]),
            warm=isinstance(subject, Config) and not msvc,
            msvc=msvc,
            zc_cplusplus=zc_cplusplus,
        )
    except BadInput as exc:
        return str(exc)
    errors = unit.errors()
    if errors:
        return f"does not parse: {errors[0].one_line()}"
    try:
        params = params_layout(unit, unit.aliases(f"{aliases.NAMESPACE}0"))
    except ValueError as exc:
        return str(exc)
    return "the kernel has no Params" if params is None else params


def with_params(tgt: Target, subject, rep: LayoutReport) -> LayoutReport:
    """``rep`` with its kernel's ``Params`` on Linux x86-64 (``params``) and MSVC x64
    (``params_msvc``), for a 3.x kernel laid out without error; each not read is said in
    ``params_note``."""
    if rep.error is not None or rep.subject_kind != "kernel" or rep.kernel is None:
        return rep
    got = {abi: read_params(tgt, subject, msvc=abi == "msvc") for abi in ("linux", "msvc")}
    notes = [f"Params ({abi}) not read: {v}" for abi, v in got.items() if isinstance(v, str)]
    return replace(
        rep,
        params=got["linux"] if isinstance(got["linux"], ParamsLayout) else rep.params,
        params_msvc=got["msvc"] if isinstance(got["msvc"], ParamsLayout) else None,
        params_note="; ".join(notes) or None,
    )


__all__ = ["params_probe", "read_params", "with_params"]
