"""What a ``SharedStorage`` that is none of CUTLASS's GEMM shapes holds, from its members.

A GEMM kernel's storage is told apart by its type's members (``CollectiveMainloop`` and
``CollectiveEpilogue``, or ``Mma`` and ``Epilogue``: :mod:`cutlass_layout.subjects.probe`). Any other
type's ``SharedStorage`` is laid out as it is, and named here from its members' names, never
split into a mainloop and an epilogue it may not have:

* ``fmha``: it holds attention's tiles, a Q tile (a member named ``smem_q...``) and a K or V
  tile (``smem_k...``/``smem_v...``), at any depth. So do the FMHA kernels of CUTLASS
  examples 77 (``Sm100FmhaFwdKernelTmaWarpspecialized``: ``mainloop_epilogue.mainloop.smem_q``,
  ``.smem_k``/``.smem_v`` in a union), 88 (``FmhaKernelTmaWarpSpecialized``:
  ``tensors.mainloop.smem_q``) and flashinfer's copy of 77
  (``include/flashinfer/attention/blackwell/kernel/sm100_fmha_fwd_kernel_tma_warpspecialized.hpp``:
  ``mainloop.smem_q`` in an anonymous union), and the MLA kernels' ``smem_kc``/``smem_vc``;
* ``storage``: anything else.
"""

from __future__ import annotations

import re

from ..model import StructLayout

_Q_RE = re.compile(r"smem_q", re.I)
_KV_RE = re.compile(r"smem_[kv]", re.I)

#: subject kind -> what the report calls such a storage
WHAT = {
    "fmha": "an FMHA (fused multi-head attention) kernel's own SharedStorage",
    "storage": "a SharedStorage of no CUTLASS GEMM shape (the type has no CollectiveMainloop "
    "and CollectiveEpilogue, nor Mma and Epilogue), as it is",
}


def attention_tiles(s: StructLayout) -> list[str]:
    """The dotted paths (as C++ names them: an anonymous union's members through the enclosing
    struct) of the first Q tile and the first two K or V tiles in ``s``, depth first:
    ``["mainloop.smem_q", "mainloop.smem_k", "mainloop.smem_v"]``; empty unless there is a Q
    tile and a K or V tile."""
    q = kv = None
    found: list[str] = []
    for path, f in s.walk():
        name = f.name
        path = path.replace("<anonymous>.", "")  # as C++ names a member of an anonymous union
        if q is None and _Q_RE.match(name):
            q = path
            found.append(path)
        elif _KV_RE.match(name) and len([p for p in found if p != q]) < 2:
            kv = kv or path
            found.append(path)
    return found if q is not None and kv is not None else []


def storage_kind(s: StructLayout) -> str:
    """``fmha`` where ``s`` holds attention's tiles (:func:`attention_tiles`), else ``storage``."""
    return "fmha" if attention_tiles(s) else "storage"


def describe(kind: str | None, s: StructLayout) -> str:
    """One phrase for the report: what the storage is and, for ``fmha``, the tiles that say so."""
    what = WHAT.get(kind, WHAT["storage"]) if kind is not None else WHAT["storage"]
    if kind == "fmha":
        what += f", not a GEMM's mainloop + epilogue (Q, K/V tiles: {', '.join(attention_tiles(s))})"
    return what
