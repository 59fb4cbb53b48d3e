"""scripts/gpu_occupancy.py's compare step (what docs/commands/layout.md#checked-on-an-h100 ran on
an H100): the tool's CTAs/SM against the GPU's JSON lines, exit 0 when every built kernel agrees.
The inputs are written here: a count the tool gives must equal the GPU's; a bound (no declared
register split) must not be exceeded."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gpu_occupancy.py"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_occupancy", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tool(ident: str, ctas, at_most=None) -> dict:
    return {
        "id": ident,
        "occupancy": {
            "threads_per_block": 384,
            "dynamic_smem_bytes": 99328,
            "registers": None,
            "ctas_per_sm": ctas,
            "at_most": at_most,
            "limited_by": ["shared_memory"],
        },
    }


def _gpu(ident: str, n: int) -> dict:
    return {"id": ident, "smem": 99328, "threads": 384, "num_regs": 168, "gpu_ctas_per_sm": n, "error": "no error"}


def test_compare_exits_0_only_when_every_built_kernel_agrees(tmp_path, capsys):
    mod = _script()
    tool, gpu = tmp_path / "tool.json", tmp_path / "gpu.jsonl"
    tool.write_text(json.dumps([_tool("a", 2), _tool("b", None, at_most=2)]))
    gpu.write_text("\n".join(json.dumps(x) for x in (_gpu("a", 2), _gpu("b", 1))))
    assert mod.main(["compare", "--tool", str(tool), "--gpu", str(gpu)]) == 0
    assert "2 of 2 kernels agree" in capsys.readouterr().out
    gpu.write_text("\n".join(json.dumps(x) for x in (_gpu("a", 1), _gpu("b", 3))))  # a count off, a bound exceeded
    assert mod.main(["compare", "--tool", str(tool), "--gpu", str(gpu)]) == 1
    assert "0 of 2 kernels agree" in capsys.readouterr().out
