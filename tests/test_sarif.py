"""``audit --format sarif``: SARIF 2.1.0 for GitHub code scanning and other CI systems.

Offline: the mini flashinfer of tests/test_audit.py (its sizes by hand there, ``mini_sizes``):
its SM120 audit has one tactic over capacity that the runtime tries (256x128x32B FINALIZE,
129024 B, 5 stages), one that does not compile and one source with an error
(tests/test_audit_github.py says the same of its GitHub annotations). With the package index:
the output checked against the SARIF 2.1.0 JSON schema (``sarif-2.1.0-rtm.5.json``, the
schema GitHub's upload takes, as Microsoft's ``@microsoft/sarif-matcher-utils`` npm package
carries it), fetched once into the test session's cache.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from test_audit import CAPACITY, MINI, mini_sizes

from cutlass_layout.cli import main

#: The npm package that carries the SARIF 2.1.0 schema, and the schema's path in it.
SCHEMA_PACKAGE = "@microsoft/sarif-matcher-utils@1.0.0-beta.0"
SCHEMA_FILE = "package/lib/schemas/sarif-2.1.0-rtm.5.json"


def _line_of(path: Path, text: str) -> int:
    return 1 + next(i for i, ln in enumerate(path.read_text().split("\n")) if text in ln)


def _sarif(capsys, argv: list[str]) -> tuple[int, dict, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, json.loads(out), err


@pytest.mark.mini_shared
def test_mini_sarif(mini, capsys):
    """One run for the arch, a result per GitHub annotation: the over-capacity tactic as an
    ``error`` at the launcher's kernel alias (in the flashinfer repository's layout) with its
    numbers, the tactic that does not compile as a ``warning`` there too, the source with an
    error as a ``warning`` without a location; exit 1 with --check as with the other formats."""
    inl = MINI / "flashinfer/data/csrc/nv_internal/launchers/mini_launcher.inl"
    alias = _line_of(inl, "using GemmKernel")
    over = mini_sizes(256, 128, 64, 5, 4096)[2]  # 129024, 5 stages (test_audit.py)
    big, bad = "moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize", "moe/CtaShape128x64x0B/nvfp4xnvfp4/f16/none"
    code, doc, err = _sarif(capsys, ["audit", str(mini), "--format", "sarif", "--check"])
    assert code == 1 and doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    assert run["tool"]["driver"]["name"] == "cutlass-layout"
    # by distribution and version: the same whether the install was cached or downloaded
    assert run["automationDetails"]["id"] == "cutlass-layout/flashinfer-python==0.0.1+mini/sm120/"
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("over-capacity", "error"),
        ("does-not-compile", "warning"),
        ("incomplete", "warning"),
    ]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)
    where = {
        "artifactLocation": {"uri": "csrc/nv_internal/launchers/mini_launcher.inl", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": alias},
    }
    assert results[0]["locations"] == [{"physicalLocation": where}]
    assert results[0]["properties"] == {
        "tactic": big,
        "kernel_bytes": over,
        "capacity_bytes": CAPACITY,
        "headroom_bytes": CAPACITY - over,
        "stages": 5,
    }
    assert results[0]["message"]["text"].startswith(
        f"{big}: SharedStorage {over} B, over the {CAPACITY} B sm120 capacity by {over - CAPACITY} B"
    )
    assert results[1]["locations"] == [{"physicalLocation": where}] and results[1]["properties"] == {"tactic": bad}
    assert "locations" not in results[2] and "mini_mixed_sm120.cu" in results[2]["message"]["text"]
    assert str(mini) not in json.dumps(doc)  # no local path in a report for a PR
    assert "error:" not in err


def _schema(cache: Path) -> dict:
    """The SARIF 2.1.0 schema from the npm registry (``npm pack``), kept in ``cache``."""
    target = cache / "sarif-schema" / Path(SCHEMA_FILE).name
    if not target.is_file():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("no npm on PATH: the SARIF schema comes from the npm registry")
        work = cache / "sarif-schema" / "pack"
        work.mkdir(parents=True, exist_ok=True)
        name = (
            subprocess.run(
                [npm, "pack", SCHEMA_PACKAGE, "--silent"], cwd=work, check=True, capture_output=True, text=True
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        with tarfile.open(work / name) as tar:
            target.write_bytes(tar.extractfile(SCHEMA_FILE).read())
    return json.loads(target.read_text())


@pytest.mark.mini_shared
@pytest.mark.network
def test_mini_sarif_passes_the_sarif_2_1_0_schema(mini, capsys, tmp_path):
    """The log validates against the SARIF 2.1.0 schema (draft 4, as the schema says)."""
    import os

    import jsonschema

    schema = _schema(Path(os.environ.get("CUTLASS_LAYOUT_CACHE", tmp_path)))
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    _, doc, _ = _sarif(capsys, ["audit", str(mini), "--format", "sarif"])
    jsonschema.Draft4Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(doc), key=str)
    assert not errors, errors[0].message
