"""What a preset approximates (``layout``/``sweep``), and what the install builds for the same
config: :func:`approximations` reads the install's audit of the preset's family from the
results cache. (Named ``presets``, not ``approximations``, so that the function re-exported
by the package does not shadow its module.)"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import BadInput
from ...installs.naming import MOE
from ...subjects.archs import AUDIT_ARCHS
from .command import audit
from .filters import tactic_filter

#: preset -> the kernel it approximates, in words
PRESET_KERNELS = {
    "trtllm-moe": "TensorRT-LLM's MoE grouped GEMM (moe_gemm_tma_ws_launcher.inl)",
    "flashinfer": "the CUTLASS GEMMs of flashinfer's JIT modules",
    "vllm": "vLLM's blockwise FP8 GEMM (scaled_mm_blockwise_sm120_fp8_dispatch.cuh)",
}
#: preset -> the audit family of its kernels (None: every family but moe); vllm has none
PRESET_FAMILIES = {"trtllm-moe": MOE, "flashinfer": None}


def _audit_source(origin: str) -> str | None:
    """The install as ``audit`` takes it, from its tree's origin (as
    :func:`cutlass_layout.sources.trees.resolve_cutlass` writes it): ``NAME==VERSION``, the wheel's
    or folder's path, the distribution; None for one found in this environment."""
    m = re.match(r"(?:default )?(\S+==\S+) \(wheel ", origin)
    if m:
        return m.group(1)
    for prefix in ("wheel ", "directory ", "installed "):
        if origin.startswith(prefix):
            rest = origin[len(prefix) :]
            return None if prefix == "installed " and " " in rest else rest
    return None


def approximations(configs: list, tree, *, cuda_path=None) -> list:
    """The :class:`~cutlass_layout.model.Approximation` of each config of ``configs`` read
    from the CUTLASS tree ``tree`` (None for what is not a preset config: a user type).

    Where ``tree`` is a flashinfer install's (:func:`cutlass_layout.sources.flashinfer.flashinfer_of`:
    nothing is fetched or unpacked) and :func:`audit` takes the config's arch, the install's
    audit of the preset's family is read from the results cache (``cached_only``: nothing is
    run or parsed; once per arch and family for all configs), and its tactics with the
    config's kernel kind, A, B, D, tile (K in elements) and cluster are listed
    (:func:`tactic_filter`); the stage count and the epilogue flavour are not matched, which
    is the point: the install's tactic of that tile is what runs. Never raises for an install
    that cannot be read (the approximation says nothing was audited).
    """
    from ...model import Approximation
    from ...sources.flashinfer import flashinfer_of
    from ...subjects.config import Config

    out: list[Approximation | None] = []
    install = None
    looked = flashinfers = False
    audits: dict = {}
    for cfg in configs:
        if not isinstance(cfg, Config):
            out.append(None)
            continue
        appr = Approximation(preset=cfg.preset, kernel=PRESET_KERNELS.get(cfg.preset, cfg.preset))
        out.append(appr)
        if cfg.preset not in PRESET_FAMILIES:
            continue
        if not looked:
            looked = True
            # a flashinfer's tree (the wheel's CUTLASS alone may be all that is unpacked)
            flashinfers = Path(tree.include_root).parts[-4:] == ("flashinfer", "data", "cutlass", "include")
            try:
                install = flashinfer_of(tree)
            except BadInput:
                install = None
        if install is None and not flashinfers:
            continue
        appr.source = _audit_source(tree.origin)
        if install is not None:
            appr.install = f"flashinfer-python {install.version}"
        else:  # a wheel's CUTLASS tree alone: its version as named
            m = re.fullmatch(r"(\S+)==(\S+)", appr.source or "")
            appr.install = f"{m.group(1)} {m.group(2)}" if m else "flashinfer"
        appr.family = PRESET_FAMILIES[cfg.preset]
        if cfg.arch not in AUDIT_ARCHS:
            continue
        appr.arch = cfg.arch
        appr.audited = False
        if install is None:
            continue
        key = (cfg.arch, appr.family)
        if key not in audits:
            try:
                audits[key] = audit(
                    install, cfg.arch, family=appr.family, cuda_path=cuda_path, strict_family=False, cached_only=True
                )
            except BadInput:
                audits[key] = None
        res = audits[key]
        appr.audited = res is not None
        if res is None:
            continue
        try:
            keep = tactic_filter(
                kernel=cfg.kernel,
                a=cfg.a,
                b=cfg.b,
                d=cfg.element_d,
                tile="x".join(map(str, cfg.mnk)),
                cluster="x".join(map(str, cfg.cluster)),
            )
        except BadInput:  # a kind no tactic is named by
            continue
        appr.tactics = [
            {
                k: getattr(t, k)
                for k in ("id", "verdict", "stages", "kernel_bytes", "headroom_bytes", "runtime_candidate")
            }
            for t in res.tactics
            if (t.family == appr.family if appr.family else t.family != MOE) and keep(t)
        ]
    return out


__all__ = ["PRESET_FAMILIES", "PRESET_KERNELS", "approximations"]
