"""cutlass-layout: exact shared-memory layouts of CUTLASS GEMM kernels.

From Python, with the command line's values and defaults::

    import cutlass_layout as cl

    src = "flashinfer-python==0.7.2.post1"
    rep = cl.layout("128x256x128", preset="trtllm-moe", cutlass=src)   # or cl.Config(...)
    rep.stages, rep.kernel.size, rep.fits, rep.headroom_bytes           # (3, 98304, True, 3072)
    many = cl.layouts(["128x128x128", "256x128x128"], src)              # one parse
    res = cl.sweep(tile="128x{32,64,128,256}x{128,256}", preset=["flashinfer", "trtllm-moe"],
                   cutlass=src)                                          # res.records
    d = cl.diff("flashinfer-python==0.6.8", src, tile="128x{32,64}x256")  # d.numeric, d.structural
    s = cl.scan(src, grep="TensorStorage")                              # s.structs, s.constants
    a = cl.audit(src, family="moe")                     # the kernels flashinfer builds: a.tactics

Each returns a dataclass of :mod:`cutlass_layout.model` whose ``to_dict()`` is the
command's ``--json``; :mod:`cutlass_layout.reports` prints them as the command does. A bad
value raises :class:`BadInput` with one line; a layout reported with ``error`` set did not
compile (``layout(..., raise_on_error=True)`` raises :class:`DoesNotCompile` instead).

``cutlass_layout.sweep``, ``.diff``, ``.scan`` and ``.audit`` are these functions, not their modules
(so is ``import cutlass_layout.sweep as m``): import a module's names with ``from``
(``from cutlass_layout.sweep import MAX_STAGES``), or take it from ``sys.modules``.

Layers, each using only those above it: :mod:`~cutlass_layout.model` (with ``errors``,
``cache``, ``inputs`` and ``runner``, which import nothing from the package but the errors)
-> ``archs``, ``config``, ``sources``, ``cuda`` -> :mod:`~cutlass_layout.frontends`
(libclang, tree-sitter) ->
``probe`` -> :mod:`~cutlass_layout.engine` (and ``kernels``: an install's own sources) ->
the commands (``sweep``, ``diff``, ``scan``, ``audit``)
-> :mod:`~cutlass_layout.reports` -> :mod:`~cutlass_layout.cli`.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from .config import Config, parse_tile
from .engine import Target, layout, layouts, target
from .errors import BadInput, CutlassLayoutError, DoesNotCompile
from .model import AuditResult, DiffResult, LayoutReport, ScanResult, SweepRecord, SweepResult, Tactic
from .probe import UserType
from .sources import CutlassTree, resolve_cutlass

# the command functions: these names shadow their modules (see the docstring)
from .commands.audit import audit
from .commands.diff import diff
from .commands.scan import scan
from .commands.sweep import sweep

try:
    __version__ = _version("cutlass-layout")  # the one version: pyproject.toml's
except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
    __version__ = "0+unknown"

__all__ = [
    "AuditResult", "Tactic", "audit", "BadInput", "Config", "CutlassLayoutError", "CutlassTree", "DiffResult", "DoesNotCompile",
    "LayoutReport", "ScanResult", "SweepRecord", "SweepResult", "Target", "UserType", "diff",
    "layout", "layouts", "parse_tile", "resolve_cutlass", "scan", "sweep", "target",
]
