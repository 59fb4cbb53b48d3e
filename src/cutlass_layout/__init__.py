"""cutlass-layout: exact shared-memory layouts of CUTLASS GEMM kernels.

From Python::

    import cutlass_layout as cl
    rep = cl.layout(cl.Config(tile=(128, 256, 128)), cutlass="flashinfer-python==0.7.2.post1")
    rep.kernel.size, rep.stages, rep.fits, rep.headroom_bytes

Data flows one way: :mod:`~cutlass_layout.sources` (find a CUTLASS tree) ->
:mod:`~cutlass_layout.frontends` (libclang) -> :mod:`~cutlass_layout.model` (dataclasses)
-> :mod:`~cutlass_layout.report` (table, JSON) -> :mod:`~cutlass_layout.cli`.
"""

from .config import Config, parse_tile
from .engine import layout, layouts, target
from .errors import BadInput, CutlassLayoutError, DoesNotCompile
from .model import LayoutReport
from .probe import UserType
from .sources import CutlassTree, resolve_cutlass

__version__ = "0.1.0"

__all__ = [
    "BadInput", "Config", "CutlassLayoutError", "CutlassTree", "DoesNotCompile",
    "LayoutReport", "UserType", "layout", "layouts", "parse_tile", "resolve_cutlass", "target",
]
