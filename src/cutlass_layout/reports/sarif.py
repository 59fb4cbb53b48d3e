"""An audit as SARIF 2.1.0 (``audit --format sarif``): the format GitHub code scanning uploads
(``github/codeql-action/upload-sarif``) and other CI systems read.

One log, one run per arch audited (its ``automationDetails.id`` names the install by
distribution and version, and the arch, ``cutlass-layout/flashinfer-python==0.7.4/sm120/``: the
same from run to run, so code scanning keeps the runs of several arches or installs apart); one result
per finding of the audit's GitHub annotations (:func:`cutlass_layout.reports.audit.findings`,
:func:`cutlass_layout.reports.library_audit.findings`): a tactic over capacity that the runtime
tries (``error``), one it never tries (``note``), one that does not compile (``warning``), the
exact fits of one launcher (``note``), a tactic's launch findings (``launch``: ``error``, or
``warning`` for a non-portable cluster alone; ``launch-not-tried``: ``note``), sources with an
error (``warning``). A result is located
where its kernel type is written, the launcher's line in the flashinfer repository
(``csrc/...``, :func:`~cutlass_layout.sources.flashinfer.checkout_path`), relative to the
repository's root (``%SRCROOT%``); a result with no such line (a launcher outside the package,
a kernel of CUTLASS's library generator) has no physical location and names its tactics as
logical locations. Each result's ``properties`` hold the numbers (bytes) of its tactic.

Mirrors the OASIS SARIF 2.1.0 standard (``sarif-schema-2.1.0.json``); a test checks the output
against the 2.1.0 schema.
"""

from __future__ import annotations

from ..core.version import VERSION
from ..model import Verdict
from .audit import RULES, Finding, install_name
from .audit import findings as install_findings
from .library_audit import findings as library_findings

#: The SARIF version and its schema's address.
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: A finding's level as SARIF says it.
LEVEL = {"error": "error", "warning": "warning", "notice": "note"}


def _is_library(result) -> bool:
    return result.provenance.get("library") == "cutlass_library"


#: Each rule's level where the rule alone says it (a finding's own level is its result's).
RULE_LEVEL = {"over-capacity": "error", "does-not-compile": "warning", "launch": "error", "incomplete": "warning"}


def _rules() -> list[dict]:
    return [
        {
            "id": rule,
            "name": "".join(w.capitalize() for w in rule.split("-")),
            "shortDescription": {"text": text.split(": ")[0] if len(text) > 120 else text},
            "fullDescription": {"text": text},
            "defaultConfiguration": {"level": LEVEL[RULE_LEVEL.get(rule, "notice")]},
        }
        for rule, text in RULES.items()
    ]


def _numbers(by_id: dict, ids: tuple[str, ...]) -> dict:
    """The one tactic's numbers (bytes) of a finding about one tactic (``by_id``: the audit's
    tactics by id); the ids of a finding about several; {} for one about none."""
    if len(ids) != 1:
        return {"tactics": list(ids)} if ids else {}
    t = by_id.get(ids[0])
    if t is None or t.verdict == Verdict.DOES_NOT_COMPILE:
        return {"tactic": ids[0]}
    out = {
        "tactic": t.id,
        "kernel_bytes": t.kernel_bytes,
        "capacity_bytes": t.capacity_bytes,
        "headroom_bytes": t.headroom_bytes,
        "stages": t.stages,
    }
    if t.launch_findings:
        out["launch_findings"] = list(t.launch_findings)
    return out


def _result(by_id: dict, f: Finding, rule_index: dict[str, int]) -> dict:
    out = {"ruleId": f.rule, "ruleIndex": rule_index[f.rule], "level": LEVEL[f.level], "message": {"text": f.message}}
    if f.file is not None:
        region = {"startLine": f.line} if f.line else {}
        out["locations"] = [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": f.file, "uriBaseId": "%SRCROOT%"},
                    **({"region": region} if region else {}),
                }
            }
        ]
    elif f.tactics:
        out["locations"] = [{"logicalLocations": [{"name": i, "kind": "object"} for i in f.tactics]}]
    numbers = _numbers(by_id, f.tactics)
    if numbers:
        out["properties"] = numbers
    return out


def run_of(result) -> dict:
    """One arch's audit (a flashinfer install's or CUTLASS's kernel library's) as a SARIF run."""
    library = _is_library(result)
    found = library_findings(result) if library else install_findings(result)
    rules = _rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    by_id = {t.id: t for t in result.tactics}
    p = result.provenance
    name = f"CUTLASS's kernel library {p['version']}" if library else install_name(p)
    # the same from run to run (never how the install was found: cached, downloaded): code
    # scanning tells the runs' results apart by it
    stable = f"{'cutlass_library' if library else p['library']}=={p['version']}"
    return {
        "tool": {
            "driver": {
                "name": "cutlass-layout",
                "version": VERSION,
                "semanticVersion": VERSION.split("+")[0],
                "rules": rules,
            }
        },
        "automationDetails": {"id": f"cutlass-layout/{stable}/{result.arch}/"},
        "originalUriBaseIds": {
            "%SRCROOT%": {
                "description": {
                    "text": "The root of the repository the install is built from (for flashinfer: its git checkout)"
                }
            }
        },
        "results": [_result(by_id, f, index) for f in found],
        "properties": {
            "install": name,
            "arch": result.arch,
            "capacity_bytes": result.capacity_bytes,
            "tactics": len(result.tactics),
        },
    }


def to_sarif(results: list) -> dict:
    """The audits ``results`` (one :class:`~cutlass_layout.model.AuditResult` per arch) as one
    SARIF 2.1.0 log (a dict; ``json.dumps`` it), a run per arch."""
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run_of(r) for r in results]}


__all__ = ["LEVEL", "SARIF_SCHEMA", "SARIF_VERSION", "run_of", "to_sarif"]
