"""Regenerate the README's pictures (docs/*.png) with the commands the README shows.

    python scripts/make_docs_images.py            # writes docs/sweep.png, docs/memory-map.png

* ``docs/sweep.png``: a sweep of TensorRT-LLM MoE flavoured SM120 NVFP4 grouped GEMMs on
  flashinfer-python 0.7.2.post1, tiles named in bytes as TensorRT-LLM names them, the builder's
  stage count (auto) beside a forced ``StageCount<4>``: fits, exact fits (headroom 0), over
  capacity and a config that does not compile;
* ``docs/memory-map.png``: the kernel flashinfer 0.7.2.post1 builds for the MoE tactic
  ``CtaShape128x256x64B`` with the FINALIZE epilogue, 1024 bytes over the 101376 an SM120 block
  gets (tests/handed.md section E): ``layout --tactic``.

The wheel comes from the package index into the user cache on the first run (62 MB; the
audit of the MoE family takes about a minute and a half cold, then is cached). PNGs are
written at 150 dpi, then stored with a palette of 256 colors (Pillow, which matplotlib
depends on) to keep them small.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cutlass_layout.cli import main

DOCS = Path(__file__).resolve().parent.parent / "docs"
SRC = "flashinfer-python==0.7.2.post1"

COMMANDS = {
    "sweep.png": [
        "sweep",
        "--cutlass",
        SRC,
        "--preset",
        "trtllm-moe",
        "--tile",
        "128x{32,64,128,256}x{64,128}B",
        "--tile",
        "256x128x64B",
        "--stages",
        "auto",
        "--stages",
        "4",
    ],
    "memory-map.png": ["layout", "--cutlass", SRC, "--tactic", "moe/CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize"],
}


def shrink(path: Path) -> None:
    """Store a PNG with a 256-color palette (the charts use a dozen colors and antialiasing)."""
    from PIL import Image

    with Image.open(path) as im:
        dpi = im.info.get("dpi")
        small = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True, dpi=dpi)


def run() -> int:
    DOCS.mkdir(exist_ok=True)
    for name, argv in COMMANDS.items():
        out = DOCS / name
        print(
            "cutlass-layout " + " ".join(f"'{a}'" if "{" in a else a for a in argv) + f" --plot docs/{name}",
            file=sys.stderr,
        )
        code = main(argv + ["--plot", str(out), "--format", "json"])
        if code not in (0, 1) or not out.is_file():
            print(f"error: {name} was not drawn (exit {code})", file=sys.stderr)
            return 1
        shrink(out)
        print(f"{out} {out.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run())
