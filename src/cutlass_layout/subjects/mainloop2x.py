"""Which mainloop CUTLASS 2.x chose for a kernel, and in which element types it stages A and B.

A 2.x kernel's ``Mma`` is whatever ``cutlass::gemm::threadblock::DefaultMma`` and
``DefaultMmaCore`` pick from the stage count, the arch, the operator class and the element
types, and the pick does not always stage the operands as the kernel loads them. The case
users meet: ``DefaultMma<float, LayoutA, kAlignmentA, float, LayoutB, kAlignmentB, float,
layout::RowMajor, arch::OpClassTensorOp, ArchTag, ThreadblockShape, WarpShape,
InstructionShape, 2, Operator, false, SharedMemoryClearOption::kNone, ...>``
(``cutlass/gemm/threadblock/default_mma.h``, the second "Specialization for row-major output
(OperatorClass TensorOp)": float A, B and C on tensor cores, 2 stages, any arch) ignores the
kernel's ``Operator`` and builds ``DefaultMmaCore<..., float, ..., arch::OpClassTensorOp, 2,
arch::OpMultiplyAddFastF16>`` (``cutlass/gemm/threadblock/default_mma_core_sm75.h``, "Below is
for arch::OpMultiplyAddFastF16": four specializations, one per A/B layout pair), whose
``SmemIteratorA``/``SmemIteratorB`` and warp-level ``MmaTensorOp`` are ``half_t`` (accumulating
in float): a float kernel at 2 stages keeps half the bytes per stage it would in float, and
multiplies in f16.

:func:`mainloop_choice` describes what the probe read (the canonical types of the mainloop,
its warp operator's ``ElementA``/``ElementB`` and its iterators' ``Element``) and, where the
staged types differ from the loaded ones, says so, citing the specialization above at its
line in the tree being analysed when the tree has it (:func:`fast_f16_specializations`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import BadInput
from ..model import MainloopChoice, short_name

#: The headers holding the specializations (relative to the include root).
DEFAULT_MMA = "cutlass/gemm/threadblock/default_mma.h"
DEFAULT_MMA_CORE_SM75 = "cutlass/gemm/threadblock/default_mma_core_sm75.h"

_DEFAULT_MMA_FLOAT = re.compile(r"struct\s+DefaultMma\s*<\s*float\s*,")
_CORE_FAST_F16 = re.compile(
    r"struct\s+DefaultMmaCore\s*<[^{;]*?\bfloat\s*,[^{;]*?"
    r"arch::OpMultiplyAddFastF16\s*>\s*\{"
)


def _body(text: str, start: int) -> str:
    """The text from ``start`` to the end of the struct opened after it (braces counted)."""
    open_ = text.find("{", start)
    if open_ < 0:
        return text[start:]
    depth = 0
    for i in range(open_, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


def fast_f16_specializations(include_root) -> tuple[int | None, int | None]:
    """Lines (1-based) in ``include_root``'s headers of the two specializations the module
    docstring names: the ``DefaultMma<float, ..., 2, ...>`` of :data:`DEFAULT_MMA` whose
    arguments name ``arch::OpClassTensorOp`` and whose body builds its core with
    ``arch::OpMultiplyAddFastF16``, and the first ``DefaultMmaCore<..., float, ...,
    arch::OpMultiplyAddFastF16>`` of :data:`DEFAULT_MMA_CORE_SM75`. ``None`` for one the tree
    does not have (or a header it cannot read)."""
    from ..core.files import read_text

    root = Path(include_root)
    lines: list[int | None] = []
    try:
        text = read_text(root / DEFAULT_MMA, what="header", errors="replace")
    except BadInput:
        text = ""
    found = None
    for m in _DEFAULT_MMA_FLOAT.finditer(text):
        body = _body(text, m.start())
        args = body[: body.find("{")]
        if (
            "arch::OpClassTensorOp" in args
            and re.search(r"InstructionShape\s*,\s*2\s*,", args)
            and "arch::OpMultiplyAddFastF16" in body
        ):
            found = text.count("\n", 0, m.start()) + 1
            break
    lines.append(found)
    try:
        text = read_text(root / DEFAULT_MMA_CORE_SM75, what="header", errors="replace")
    except BadInput:
        text = ""
    fast = _CORE_FAST_F16.search(text)
    lines.append(text.count("\n", 0, fast.start()) + 1 if fast else None)
    return lines[0], lines[1]


def mainloop_choice(
    mainloop: str, smem: tuple[str, str], loaded: tuple[str, str], stages: int | None, include_root
) -> MainloopChoice:
    """The :class:`~cutlass_layout.model.MainloopChoice` of a 2.x mainloop.

    Args:
        mainloop: the canonical spelling of the mainloop's class
            (``cutlass::gemm::threadblock::MmaPipelined<cutlass::gemm::GemmShape<128, ...>``).
        smem: the canonical element types of A and B in shared memory.
        loaded: the canonical element types the kernel loads for A and B.
        stages: the mainloop's stage count.
        include_root: the CUTLASS tree, to cite the specialization's lines in.

    Returns:
        The choice, its ``note`` naming each operand staged in another type (``A and B staged
        as cutlass::half_t in shared memory, the kernel's A and B are float``) and why: for
        float staged as half_t at 2 stages in a tree with the specializations of the module
        docstring, both cited with their lines; else that the mainloop CUTLASS picked does so.
    """
    shown = [short_name(t) for t in (*smem, *loaded)]
    choice = MainloopChoice(
        type=short_name(mainloop), smem_a=shown[0], smem_b=shown[1], element_a=shown[2], element_b=shown[3]
    )
    if choice.staged_as_loaded:
        return choice
    diff = [(op, s, e) for op, s, e in (("A", shown[0], shown[2]), ("B", shown[1], shown[3])) if s != e]
    if len(diff) == 2 and diff[0][1:] == diff[1][1:]:
        what = f"A and B staged as {diff[0][1]} in shared memory, the kernel's A and B are {diff[0][2]}"
    else:
        what = "; ".join(f"{op} staged as {s} in shared memory, the kernel's {op} is {e}" for op, s, e in diff)
    name = choice.type.split("<", 1)[0].rsplit("::", 1)[-1]
    why = (
        f"the mainloop CUTLASS's DefaultMma / DefaultMmaCore picked for these types, stages "
        f"and arch ({name}) stages them so"
    )
    if stages == 2 and all(s == "cutlass::half_t" and e == "float" for _, s, e in diff):
        mma_line, core_line = fast_f16_specializations(include_root)
        if mma_line is not None:
            core = f"{DEFAULT_MMA_CORE_SM75}:{core_line}" if core_line is not None else DEFAULT_MMA_CORE_SM75
            why = (
                f"CUTLASS's DefaultMma for float A, B and C on tensor cores with 2 stages "
                f"({DEFAULT_MMA}:{mma_line}) builds its {name} on "
                f"DefaultMmaCore<..., arch::OpMultiplyAddFastF16> ({core}), which stages "
                "half_t and multiplies in f16 (accumulating in float), whatever the kernel's "
                "Operator"
            )
    choice.note = f"{what}: {why}"
    return choice


__all__ = ["DEFAULT_MMA", "DEFAULT_MMA_CORE_SM75", "fast_f16_specializations", "mainloop_choice"]
