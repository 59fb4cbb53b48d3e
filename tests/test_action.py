"""The composite GitHub Action (``action.yml``) and its documented use (docs/ci.md), run.

GitHub runs a composite action's steps with ``bash`` after putting each input's value (the
step's ``with:``, else the input's default) for ``${{ inputs.NAME }}`` and the action's folder
for ``${{ github.action_path }}``. This test does the same on the miniature flashinfer install
of tests/test_audit.py as the checkout (its SM120 audit has one tactic over capacity that the
runtime tries: ``--check`` fails the step, exit 1), leaving out the install step (the tool is
installed here already).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from test_readme import ROOT

ACTION = ROOT / "action.yml"


def _action() -> dict:
    return yaml.safe_load(ACTION.read_text())


def _documented_uses() -> list[dict]:
    """Every step of docs/ci.md's YAML blocks that uses this repository's action."""
    text = (ROOT / "docs" / "ci.md").read_text()
    steps = []
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        for step in yaml.safe_load(block) or []:
            if isinstance(step, dict) and str(step.get("uses", "")).startswith("OWNER/cutlass-layout@"):
                steps.append(step)
    return steps


def _script(step: dict, with_: dict) -> str:
    """A composite step's ``run`` with the inputs and the action's path put in, as GitHub does."""
    inputs = {k: str(v.get("default", "")) for k, v in _action()["inputs"].items()}
    inputs.update({k: str(v) for k, v in with_.items()})
    text = step["run"].replace("${{ github.action_path }}", str(ROOT))
    return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m.group(1)], text)


def test_the_action_is_a_composite_action_with_described_inputs():
    """action.yml's metadata as GitHub reads it: name, description, every input described, a
    composite run whose steps name their shell; it installs the tool from its own folder."""
    action = _action()
    assert action["name"] and action["description"] and action["runs"]["using"] == "composite"
    assert all(v.get("description") for v in action["inputs"].values())
    steps = action["runs"]["steps"]
    assert all(s["shell"] == "bash" for s in steps)
    assert steps[0]["run"] == 'python -m pip install "${{ github.action_path }}"'
    assert set(re.findall(r"inputs\.([\w-]+)", steps[1]["run"])) == set(action["inputs"])


def test_the_documented_uses_run(mini):
    """Each documented use of the action, run on the miniature install: github annotations (one
    ::error for the tactic over capacity) or a SARIF file (one error result), exit 1 (--check)."""
    uses = _documented_uses()
    assert [u.get("with", {}).get("format", "github") for u in uses] == ["github", "sarif"]
    audit_step = _action()["runs"]["steps"][1]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for use in uses:
        script = _script(audit_step, use.get("with", {}))
        proc = subprocess.run(
            ["bash", "-e", "-c", script], cwd=mini, env=env, capture_output=True, text=True, timeout=900
        )
        assert proc.returncode == 1, proc.stderr
        if use.get("with", {}).get("format") == "sarif":
            doc = json.loads((mini / use["with"]["sarif-file"]).read_text())
            assert [r["level"] for r in doc["runs"][0]["results"]].count("error") == 1
        else:
            assert sum(ln.startswith("::error ") for ln in proc.stdout.splitlines()) == 1
