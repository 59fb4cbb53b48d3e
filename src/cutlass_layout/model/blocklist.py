"""flashinfer's tactics blocklist: :class:`BlocklistFormat` (the format an install reads)
and :class:`Blocklist` (one install's and arch's file)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class BlocklistFormat:
    """flashinfer's offline tactics blocklist as an install reads it
    (``flashinfer/tactics_blocklist.py``, ``TacticsBlocklist.load``/``filter``, with the
    metadata fields of ``autotuner._collect_metadata``).

    Attributes:
        version: the install's flashinfer version (its ``flashinfer_version`` metadata).
        loader: the loader's file, relative to the install's package folder.
        metadata_key: the top-level key of the metadata block (``_metadata``).
        tactics_key: the top-level key of the tactics (``invalid_tactics``).
        metadata_fields: the fields the loader compares with its environment, in the order
            ``_collect_metadata`` sets them.
        ops: ``{gemm index (1, 2): custom op name}`` the CUTLASS MoE runner is tuned under
            (``"trtllm::fused_moe::gemm1"``).
        runner_class: the CUTLASS MoE runner's class name (``MoERunner``): a key is
            ``"<custom op>::<runner class>"``.
        dense: the dense runners' keys by audit family (``{"mxfp8_gemm_cutlass_sm120":
            "mxfp8_gemm::CutlassMxfp8GemmRunner"}``).
    """

    version: str
    loader: str
    metadata_key: str
    tactics_key: str
    metadata_fields: list[str]
    ops: dict[int, str]
    runner_class: str
    #: ``{audit family: "<custom op>::<runner class>"}`` of the dense CUTLASS GEMM runners whose
    #: key could be read (``gemm/gemm_base.py``)
    dense: dict[str, str] = field(default_factory=dict)

    def key(self, gemm: int) -> str:
        """The blocklist key of the runner's GEMM ``gemm`` (1 or 2)."""
        return f"{self.ops[gemm]}::{self.runner_class}"


@dataclass
class Blocklist:
    """A tactics blocklist for one install and arch, in flashinfer's format.

    Attributes:
        format: the install's :class:`BlocklistFormat`.
        arch: the arch whose capacity the tactics are over.
        invalid_tactics: ``{key: [tactic id, ...]}`` (ids ascending), as the file holds them.
        blocked: one entry per over-capacity tactic the runtime would try, with where it is
            in the file: ``{tactic (its audit id), key, tactic_id, gemm, runner, kernel_bytes,
            capacity_bytes}``; ``key``/``tactic_id`` are None where the id could not be read.
        notes: what the file cannot say, in plain words (tactics left out, runners that
            share a key).
        metadata: the ``_metadata`` block: the install's ``flashinfer_version``, ``"*"`` for
            every other field the loader compares, and what wrote it.
        left_out: the tactics ``audit --check`` fails on (over capacity, tried or maybe tried
            by the runtime, no run-time guard) that the file does not hold, one
            ``{tactic (its audit id), reason}`` each: the file is complete where this is
            empty (``audit --blocklist`` exits 1 otherwise).
    """

    format: BlocklistFormat
    arch: str
    invalid_tactics: dict[str, list[int]]
    blocked: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    left_out: list[dict] = field(default_factory=list)

    def left_out_line(self) -> str | None:
        """One line on :attr:`left_out` (how many, and why, by reason), None where nothing
        is left out."""
        if not self.left_out:
            return None
        reasons = Counter(x["reason"] for x in self.left_out)
        why = "; ".join(f"{n} of them: {r}" if len(reasons) > 1 else r for r, n in reasons.items())
        n = len(self.left_out)
        return f"{n} over-capacity tactic{'s' if n != 1 else ''} the runtime tries {'are' if n != 1 else 'is'} not in it: {why}"

    def to_json(self) -> dict:
        """The file's JSON object: ``{metadata key: {...}, tactics key: {key: [ids]}}``, as
        ``TacticsBlocklist.save`` writes it."""
        return {
            self.format.metadata_key: dict(self.metadata),
            self.format.tactics_key: {k: list(v) for k, v in self.invalid_tactics.items()},
        }
