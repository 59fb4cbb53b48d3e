"""Check the tool's occupancy (CTAs per SM) of SM90 kernels against the GPU's own figure.

Two steps, the second on a machine with an SM90 GPU and nvcc:

``prepare``
    Lays out a spread of SM90 configs (dense and grouped; tiles 64..256 x 64..256 x 64..128;
    cooperative and pingpong; bf16, f16, e4m3; clusters 1x1x1 and 2x1x1; stages auto, 2, 3, 4)
    through the Python API (one ``layouts`` batch), keeps those that compile and fit, and writes
    into ``--out``: ``tool.json`` (each config's id and the tool's ``occupancy``),
    ``occupancy.cu`` (ONE translation unit holding every config's type chain, as the probe builds
    it, guarded by ``CL_CHUNK`` so it compiles in parallel pieces, and a ``main()`` that, per
    kernel, sets ``cudaFuncAttributeMaxDynamicSharedMemorySize`` to
    ``sizeof(GemmKernel::SharedStorage)``, reads ``cudaFuncGetAttributes`` (``numRegs``, from
    ptxas) and ``cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, device_kernel<GemmKernel>,
    MaxThreadsPerBlock, smem)`` and prints one JSON line), ``run.sh`` (builds the chunks with
    nvcc in parallel and runs them), and the CUTLASS include tree (``--copy-include``).

``compare``
    Reads ``tool.json`` and the GPU's JSON lines, writes a Markdown table (config, smem, threads,
    tool CTAs/SM and what limits it, GPU CTAs/SM, ptxas registers x threads beside the declared
    split) and exits 1 on any disagreement (or a kernel without a GPU figure).

    PYTHONPATH=src python scripts/gpu_occupancy.py prepare --source INCLUDE --out .occ --copy-include
    # on the GPU machine:  bash .occ/run.sh OUTDIR   (writes OUTDIR/gpu.jsonl)
    PYTHONPATH=src python scripts/gpu_occupancy.py compare --tool .occ/tool.json --gpu gpu.jsonl --md table.md
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
from pathlib import Path

import cutlass_layout.api as cl
from cutlass_layout.subjects import probe
from cutlass_layout.subjects.aliases import DETECT, NAMESPACE

TILES_MN = [(m, n) for m in (64, 128, 256) for n in (64, 128, 256)]
SCHEDULES = ("cooperative", "pingpong")
ELEMENTS = ("bf16", "f16", "e4m3")
CLUSTERS = ("1x1x1", "2x1x1")
STAGES = ("auto", "2", "3", "4")


def candidates() -> list[dict]:
    """The spread: every (kernel, tile M x N, schedule, K), the element, cluster and stage
    count cycling through their values so that each appears with each tile size."""
    out = []
    for i, (kernel, (m, n), sched, kmul) in enumerate(
        itertools.product(("dense", "grouped"), TILES_MN, SCHEDULES, (1, 2))
    ):
        a = ELEMENTS[i % 3]
        k = 64 * kmul  # K in elements of A
        if sched == "cooperative" and m < 128:
            # the cooperative kernel's body asserts a tile M of at least 128
            # (sm90_gemm_tma_warpspecialized_cooperative.hpp), which a layout does not instantiate
            sched = "pingpong"
        cfg = dict(
            arch="sm90",
            kernel=kernel,
            a=a,
            tile=f"{m}x{n}x{k}",
            cluster=CLUSTERS[(i // 3) % 2],
            schedule=sched,
            stages=STAGES[(i // 2) % 4],
        )
        if kernel == "grouped":
            cfg["epilogue_schedule"] = "tma"
        if all(ident(cfg) != ident(o) for o in out):
            out.append(cfg)
    return out


def ident(cfg: dict) -> str:
    if "id" in cfg:
        return cfg["id"]
    return "/".join(
        [cfg["kernel"], cfg["a"], cfg["tile"], "c" + cfg["cluster"], cfg["schedule"][:4], "st" + str(cfg["stages"])]
    )


MAIN = r"""
#include <cutlass/device_kernel.h>
#include <cuda_runtime.h>
#include <cstdio>
template <class K>
void cl_occ(const char* id) {
  auto kernel = cutlass::device_kernel<K>;
  int smem = int(sizeof(typename K::SharedStorage));
  int threads = int(K::MaxThreadsPerBlock);
  cudaError_t e1 = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncAttributes attr{};
  cudaError_t e2 = cudaFuncGetAttributes(&attr, kernel);
  int n = -1;
  cudaError_t e3 = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem);
  cudaError_t e = e1 != cudaSuccess ? e1 : (e2 != cudaSuccess ? e2 : e3);
  std::printf("{\"id\": \"%s\", \"smem\": %d, \"threads\": %d, \"num_regs\": %d, \"static_smem\": %zu, "
              "\"local_bytes\": %zu, \"max_threads_attr\": %d, \"ptx_version\": %d, \"binary_version\": %d, "
              "\"gpu_ctas_per_sm\": %d, \"error\": \"%s\"}\n",
              id, smem, threads, attr.numRegs, attr.sharedSizeBytes, attr.localSizeBytes,
              attr.maxThreadsPerBlock, attr.ptxVersion, attr.binaryVersion, n, cudaGetErrorString(e));
}
int main() {
  int dev = 0;
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, dev);
  std::printf("{\"device\": \"%s\", \"cc\": \"%d.%d\", \"smem_per_sm\": %zu, \"reserved_smem_per_block\": %zu, "
              "\"regs_per_sm\": %d, \"max_threads_per_sm\": %d, \"max_blocks_per_sm\": %d, \"chunk\": %d}\n",
              p.name, p.major, p.minor, p.sharedMemPerMultiprocessor, p.reservedSharedMemPerBlock,
              p.regsPerMultiprocessor, p.maxThreadsPerMultiProcessor, p.maxBlocksPerMultiProcessor, CL_CHUNK);
"""

RUN_SH = r"""#!/bin/bash
# Build occupancy.cu's chunks in parallel (nvcc, sm_90a) and run each; JSON lines to $1/gpu.jsonl.
set -u
here=$(cd "$(dirname "$0")" && pwd)
NCHUNKS=#NCHUNKS#
EXTRA_INC="#EXTRA_INC#"
out=${1:-$here/out}; mkdir -p "$out" "$here/bin"
jobs=${JOBS:-16}
nvcc --version | tail -2 > "$out/nvcc_version.txt"
seq ${CHUNK_FROM:-0} $((NCHUNKS - 1)) | timeout ${BUILD_TIMEOUT:-530} xargs -P "$jobs" -I{} bash -c '
  nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -O1 -w -DNDEBUG --expt-relaxed-constexpr \
    -I'"$here"'/include '"$EXTRA_INC"' -DCL_CHUNK={} '"$here"'/occupancy.cu -o '"$here"'/bin/occ_{} \
    > '"$here"'/bin/build_{}.log 2>&1 || echo "chunk {} build failed" >&2
  '"$here"'/bin/occ_{} > '"$here"'/bin/run_{}.jsonl 2> '"$here"'/bin/run_{}.err || true'
cat "$here"/bin/run_*.jsonl > "$out/gpu.jsonl"
for f in "$here"/bin/build_*.log; do if [ -s "$f" ]; then echo "== $f"; tail -20 "$f"; fi; done > "$out/build_logs.txt"
wc -l "$out/gpu.jsonl"
"""


def prepare(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cands = candidates()
    configs = [cl.config(**c) for c in cands]
    reports = cl.layouts(configs, args.source, cuda_path=args.cuda_path)
    keep = []
    for c, cfg, r in zip(cands, configs, reports):
        occ = r.to_dict().get("occupancy")
        status = "error" if r.error else ("over capacity" if not r.fits else "ok")
        print(f"{ident(c):55s} {status:14s} {r.kernel.size if r.kernel else '-'}", file=sys.stderr)
        if r.error or not r.fits or not occ or occ.get("ctas_per_sm") is None:
            continue
        keep.append((c, cfg, occ))
    keep = keep[: args.max]
    if args.header:
        # kernels of one's own header (``layout --header/--type``): e.g. SM90 kernels that declare
        # no register split, whose CTA count the tool gives without registers
        users = [cl.user_type(args.header, t, arch="sm90") for t in args.type]
        for t, u, r in zip(args.type, users, cl.layouts(users, args.source, cuda_path=args.cuda_path)):
            occ = r.to_dict().get("occupancy")
            print(f"{t:55s} {'error' if r.error else 'ok'} {r.kernel.size if r.kernel else '-'}", file=sys.stderr)
            if not r.error and r.fits and occ and occ.get("ctas_per_sm") is not None:
                keep.append(({"id": "user/" + t.split("::")[-1]}, u, occ))
    per = args.per_chunk
    nchunks = (len(keep) + per - 1) // per
    parts = ["// Generated by scripts/gpu_occupancy.py: the tool's type chain of each config (probe.block).\n"]
    parts.append("#ifndef CL_CHUNK\n#define CL_CHUNK -1  // -1: every kernel in one program\n#endif\n")
    parts.append(probe.preamble() + DETECT)
    for i, (c, cfg, _) in enumerate(keep):
        parts.append(f"#if CL_CHUNK == -1 || CL_CHUNK == {i // per}\n")
        text = probe.block(cfg, i, budget=False)
        if args.header:  # the header as nvcc finds it on the GPU machine: run.sh passes -I<its folder>
            text = text.replace(f'#include "{Path(args.header).resolve()}"', f'#include "{Path(args.header).name}"')
        parts.append(text)
        parts.append("#endif\n")
    parts.append(MAIN)
    for i, (c, _, _) in enumerate(keep):
        parts.append(f"#if CL_CHUNK == -1 || CL_CHUNK == {i // per}\n")
        parts.append(f'  cl_occ<{NAMESPACE}{i}::Subject>("{ident(c)}");\n#endif\n')
    parts.append("  return 0;\n}\n")
    (out / "occupancy.cu").write_text("".join(parts))
    (out / "tool.json").write_text(
        json.dumps([{"id": ident(c), "config": c, "occupancy": occ} for c, _, occ in keep], indent=1)
    )
    inc = ""
    if args.header:
        hdir = Path(args.header).resolve().parent
        inc = str(hdir)
        if hdir.is_relative_to(out.resolve()):  # travels with the folder: found from run.sh's place
            inc = "$here/" + str(hdir.relative_to(out.resolve()))
    (out / "run.sh").write_text(
        RUN_SH.replace("#EXTRA_INC#", f"-I{inc}" if inc else "").replace("#NCHUNKS#", str(nchunks))
    )
    if args.copy_include:
        inc = Path(args.source)
        if (out / "include").exists():
            shutil.rmtree(out / "include")
        shutil.copytree(inc, out / "include")
    print(
        f"{len(keep)} kernels ({len(cands)} preset configs, {len(args.type)} user types) laid out and fit; {nchunks} chunks of {per}",
        file=sys.stderr,
    )
    return 0


def split_text(occ: dict) -> str:
    r = occ.get("registers")
    if not r:
        return "not declared"
    return (
        f"128x{r['load_registers']}x{r['load_warp_groups']} + 128x{r['mma_registers']}x{r['mma_warp_groups']}"
        f" = {r['per_cta']}"
    )


def compare(args) -> int:
    tool = json.loads(Path(args.tool).read_text())
    gpu, device = {}, None
    for line in "\n".join(Path(g).read_text() for g in args.gpu).splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        if "device" in d:
            device = d
        else:
            gpu[d["id"]] = d
    rows, agree, unbuilt = [], 0, 0
    for t in tool:
        occ, g = t["occupancy"], gpu.get(t["id"])
        want, bound = occ["ctas_per_sm"], occ.get("at_most")
        got = g["gpu_ctas_per_sm"] if g and g["error"] == "no error" else None
        # no declared register split: the tool gives a bound (at_most), which the GPU's count must not exceed
        counted = got == want if want is not None else bound is not None and got is not None and got <= bound
        ok = (
            got is not None
            and counted
            and g["smem"] == occ["dynamic_smem_bytes"]
            and g["threads"] == occ["threads_per_block"]
        )
        if want is None and bound is not None:
            want = f"<={bound}"
        agree += ok
        unbuilt += g is None
        regs = f"{g['num_regs']} x {g['threads']} = {g['num_regs'] * g['threads']}" if g else "-"
        rows.append(
            f"| `{t['id']}` | {occ['dynamic_smem_bytes']} | {occ['threads_per_block']} | {want} ({', '.join(occ['limited_by'])}) "
            f"| {got if got is not None else (g['error'] if g else 'not built')} | {regs} | {split_text(occ)} | {'yes' if ok else '**NO**'} |"
        )
    lines = []
    if device:
        lines.append(
            f"GPU: {device['device']} (CC {device['cc']}; {device['smem_per_sm']} B shared memory per SM, "
            f"{device['reserved_smem_per_block']} B reserved per block, {device['regs_per_sm']} registers, "
            f"{device['max_threads_per_sm']} threads, {device['max_blocks_per_sm']} blocks per SM)\n"
        )
    lines.append(
        "| config | smem B | threads | tool CTAs/SM (limited by) | GPU CTAs/SM | ptxas regs x threads | declared split (regs/CTA) | agree |"
    )
    lines.append("|---|---|---|---|---|---|---|---|")
    lines += rows
    lines.append(f"\n{agree} of {len(tool) - unbuilt} kernels agree ({unbuilt} laid out but not built by nvcc).")
    text = "\n".join(lines) + "\n"
    if args.md:
        Path(args.md).write_text(text)
    print(text)
    return 0 if agree == len(tool) - unbuilt else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--source", required=True, help="a CUTLASS include dir (nvcc reads the same with --copy-include)")
    p.add_argument("--cuda-path", default="pip", help="CUDA headers whose CCCL has arch_traits.h (default: the wheels)")
    p.add_argument("--out", default=".occ")
    p.add_argument("--max", type=int, default=64)
    p.add_argument("--per-chunk", type=int, default=1)
    p.add_argument("--copy-include", action="store_true")
    p.add_argument("--header", help="a header of your own kernel types, laid out as `layout --header` does")
    p.add_argument("--type", action="append", default=[], help="a kernel type of --header (repeatable)")
    c = sub.add_parser("compare")
    c.add_argument("--tool", required=True)
    c.add_argument("--gpu", required=True, action="append", help="the GPU's JSON lines (repeatable)")
    c.add_argument("--md")
    a = ap.parse_args(argv)
    return prepare(a) if a.cmd == "prepare" else compare(a)


if __name__ == "__main__":
    sys.exit(main())
