"""The one verdict vocabulary: what a kernel's shared memory comes to against the arch's
capacity (:class:`Verdict`, four values), decided in one place (:func:`verdict_of`), and the
three-valued projection the ``layout``, ``sweep`` and ``diff`` JSON schemas write beside their
own ``exact_fit`` flag (:func:`schema_verdict`). Imports nothing from the package."""

from __future__ import annotations

from enum import StrEnum


#: What an exact fit means, in one sentence: the same words in ``layout``'s verdict, the audit
#: table's note, its GitHub notice, ``audit --help`` and the README. The occupancy check is
#: TensorRT-LLM's ``compute_occupancy_for_kernel`` (``smem_size + attr.sharedSizeBytes >=
#: max_smem_per_block`` -> occupancy 0), run by its SM80 MoE and fpA_intB launchers; its TMA
#: warp-specialized launchers run none.
EXACT_FIT_MEANING = (
    "an exact fit (headroom 0 B) fits and launches (CUDA takes a request of the "
    "opt-in limit itself), but one byte more puts it over, and TensorRT-LLM's "
    "occupancy check, in the launchers that run one (SM80 MoE, fpA_intB), rejects it"
)


class Verdict(StrEnum):
    """A kernel's verdict. The values are the words every JSON output writes (a ``str``: a
    verdict compares equal to, formats as and serializes as its value).

    * ``fits``: headroom (capacity minus the bytes the kernel launches with) above 0.
    * ``exact_fit``: headroom exactly 0: fits (CUDA takes the opt-in limit itself), but any
      growth puts it over, and TensorRT-LLM's occupancy check (``compute_occupancy_for_kernel``,
      which its SM80 MoE and fpA_intB launchers run) rejects it.
    * ``over_capacity``: headroom below 0, or not known (no capacity was read): nothing says
      it fits.
    * ``does_not_compile``: the translation unit has errors (or the kernel was not laid out):
      no number at all.
    """

    FITS = "fits"
    EXACT_FIT = "exact_fit"
    OVER_CAPACITY = "over_capacity"
    DOES_NOT_COMPILE = "does_not_compile"


def verdict_of(error: object | None, headroom_bytes: int | None) -> Verdict:
    """The verdict of a kernel whose first compile error is ``error`` (None: it compiles) and
    whose headroom is ``headroom_bytes`` (bytes; None: not known), as :class:`Verdict` says."""
    if error is not None:
        return Verdict.DOES_NOT_COMPILE
    if headroom_bytes is None or headroom_bytes < 0:
        return Verdict.OVER_CAPACITY
    return Verdict.EXACT_FIT if headroom_bytes == 0 else Verdict.FITS


def schema_verdict(verdict: Verdict) -> Verdict:
    """``verdict`` as the ``layout``, ``sweep`` and ``diff`` JSON schemas write it: three
    values, an exact fit written ``fits`` (those schemas say it in their ``exact_fit`` flag);
    the ``audit`` schema writes all four."""
    return Verdict.FITS if verdict == Verdict.EXACT_FIT else verdict


__all__ = ["EXACT_FIT_MEANING", "Verdict", "schema_verdict", "verdict_of"]
