"""Check the verdicts on a real GPU: launch the laid-out kernel and see whether it runs.

Every number the engine prints is clang's record layout, cross-checked with nvcc; what a user
asks is whether the kernel launches. :func:`verify_on_gpu` builds the very types the engine
laid out (:func:`cutlass_layout.subjects.builders.config_block`) into a small program per config, compiled
with nvcc for the local GPU's arch (``-arch=sm_90a``), which

* reads the device and its opt-in shared memory per block
  (``cudaDevAttrMaxSharedMemoryPerBlockOptin``) and the kernel's static shared memory
  (``cudaFuncGetAttributes`` of ``cutlass::device_kernel<GemmKernel>``);
* prints ``sizeof(GemmKernel::SharedStorage)`` as nvcc computes it;
* runs the kernel through ``cutlass::gemm::device::GemmUniversalAdapter`` on a small problem
  (two tiles in M and N, two K tiles; two groups for a grouped kernel), as CUTLASS's examples
  48 and 57 do: ``can_implement``, ``initialize`` (which asks for the dynamic shared memory
  with ``cudaFuncSetAttribute``: where a kernel is over capacity this is the call that fails
  and CUTLASS answers "Error Internal"), ``run``, and a check of the product against a host
  reference (small integers, exact in every input type).

The verdict holds when a kernel the engine says fits initializes, runs and computes the
right product, and one it says is over capacity fails in ``initialize``; and nvcc's
``sizeof`` is the engine's. Programs are built in a temporary folder of the cache, never in
the user's tree. The runner (:data:`RUNNER`) is plain Python: ``scripts/verify_gpu.py`` can
write the programs here and run them on another machine.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput
from ..model import Verdict, plain
from ..subjects import aliases, probe
from ..subjects.config import ARCHS, Config

#: compute capability -> the arch names that run there
CC_ARCH = {(9, 0): "sm90", (12, 0): "sm120", (12, 1): "sm121", (10, 0): "sm100", (10, 3): "sm103"}

_MAIN = r"""
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/kernel_hardware_info.h>
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <vector>

// A packed stride for an (rows x cols) operand whose mode 1 (or mode 0) is the contiguous one,
// as cutlass/util/packed_stride.hpp makes it (written here: wheels do not ship tools/util).
template <class S>
S cl_packed(S s, long rows, long cols) {
  using namespace cute;
  if constexpr (is_static<std::remove_reference_t<decltype(get<1>(s))>>::value) get<0>(s) = cols;
  else get<1>(s) = rows;
  if constexpr (rank(S{}) > 2) {
    if constexpr (!is_static<std::remove_reference_t<decltype(get<2>(s))>>::value) get<2>(s) = rows * cols;
  }
  return s;
}

template <class T> T* cl_upload(std::vector<T> const& v) {
  T* p = nullptr;
  if (cudaMalloc(&p, sizeof(T) * (v.empty() ? 1 : v.size())) != cudaSuccess) return nullptr;
  cudaMemcpy(p, v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice);
  return p;
}

template <class E> std::vector<E> cl_fill(long n, int seed) {
  std::vector<E> v(n);
  unsigned x = 2166136261u + seed;
  for (long i = 0; i < n; ++i) { x = x * 1664525u + 1013904223u; v[i] = E(float(int((x >> 24) % 5) - 2)); }
  return v;
}

template <class Kernel, bool Grouped>
void cl_run(int index, int M, int N, int K) {
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using EA = typename Kernel::ElementA;
  using EB = typename Kernel::ElementB;
  using ED = typename Kernel::ElementD;
  using EC = std::conditional_t<std::is_void_v<typename Kernel::ElementC>, ED, typename Kernel::ElementC>;
  constexpr bool has_c = !std::is_void_v<typename Kernel::ElementC>;
  int const groups = Grouped ? 2 : 1;
  cudaFuncAttributes attr{};
  cudaError_t fe = cudaFuncGetAttributes(&attr, cutlass::device_kernel<Kernel>);
  std::vector<EA> a = cl_fill<EA>(long(groups) * M * K, 1);
  std::vector<EB> b = cl_fill<EB>(long(groups) * N * K, 2);
  std::vector<ED> d(long(groups) * M * N);
  EA* dA = cl_upload(a); EB* dB = cl_upload(b); ED* dD = cl_upload(d);
  EC* dC = has_c ? cl_upload(std::vector<EC>(long(groups) * M * N)) : nullptr;
  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
  typename Gemm::Arguments args{};
  if constexpr (Grouped) {
    using Shape = typename Kernel::ProblemShape::UnderlyingProblemShape;
    using SA = typename Kernel::InternalStrideA; using SB = typename Kernel::InternalStrideB;
    using SC = typename Kernel::InternalStrideC; using SD = typename Kernel::InternalStrideD;
    // can_implement and initialize read the host copy of the problem shapes: it must outlive
    // this block (static: each program runs one kernel)
    static std::vector<Shape> shapes;
    shapes.assign(groups, Shape{M, N, K});
    std::vector<EA const*> pa; std::vector<EB const*> pb; std::vector<EC const*> pc; std::vector<ED*> pd;
    std::vector<SA> sa; std::vector<SB> sb; std::vector<SC> sc; std::vector<SD> sd;
    for (int g = 0; g < groups; ++g) {
      pa.push_back(dA + long(g) * M * K); pb.push_back(dB + long(g) * N * K);
      pc.push_back(has_c ? dC + long(g) * M * N : nullptr); pd.push_back(dD + long(g) * M * N);
      sa.push_back(cl_packed(SA{}, M, K)); sb.push_back(cl_packed(SB{}, N, K));
      sc.push_back(cl_packed(SC{}, M, N)); sd.push_back(cl_packed(SD{}, M, N));
    }
    args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
    args.problem_shape = {groups, cl_upload(shapes), shapes.data()};
    args.mainloop = {cl_upload(pa), cl_upload(sa), cl_upload(pb), cl_upload(sb)};
    // C may be void: its pointer array is `void const**`
    args.epilogue.ptr_C = reinterpret_cast<decltype(args.epilogue.ptr_C)>(cl_upload(pc));
    args.epilogue.dC = cl_upload(sc);
    args.epilogue.ptr_D = cl_upload(pd); args.epilogue.dD = cl_upload(sd);
  } else {
    using SA = typename Kernel::StrideA; using SB = typename Kernel::StrideB;
    using SC = typename Kernel::StrideC; using SD = typename Kernel::StrideD;
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {M, N, K, 1};
    args.mainloop = {dA, cl_packed(SA{}, M, K), dB, cl_packed(SB{}, N, K)};
    args.epilogue.ptr_C = dC; args.epilogue.dC = cl_packed(SC{}, M, N);
    args.epilogue.ptr_D = dD; args.epilogue.dD = cl_packed(SD{}, M, N);
  }
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  args.hw_info = hw;
  Gemm gemm;
  cutlass::Status can = gemm.can_implement(args);
  size_t ws_bytes = Gemm::get_workspace_size(args);
  void* ws = nullptr;
  if (ws_bytes) cudaMalloc(&ws, ws_bytes);
  cutlass::Status init = gemm.initialize(args, ws);
  cutlass::Status run = cutlass::Status::kErrorNotSupported;
  cudaError_t sync = cudaSuccess;
  int correct = -1;
  double max_err = -1;
  if (init == cutlass::Status::kSuccess) {
    run = gemm.run();
    sync = cudaDeviceSynchronize();
    if (run == cutlass::Status::kSuccess && sync == cudaSuccess) {
      cudaMemcpy(d.data(), dD, sizeof(ED) * d.size(), cudaMemcpyDeviceToHost);
      correct = 1;
      max_err = 0;
      for (int g = 0; g < groups; ++g)
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            float ref = 0;
            for (int k = 0; k < K; ++k)
              ref += float(a[(long(g) * M + m) * K + k]) * float(b[(long(g) * N + n) * K + k]);
            double err = std::fabs(double(float(d[(long(g) * M + m) * N + n])) - ref);
            if (err > max_err) max_err = err;
            if (err > 1.0 + 0.01 * std::fabs(ref)) correct = 0;
          }
    }
  }
  std::printf("kernel %d sizeof=%zu static=%zu attr=%s can_implement=\"%s\" initialize=\"%s\" "
              "run=\"%s\" sync=\"%s\" correct=%d max_err=%g\n", index,
              sizeof(typename Kernel::SharedStorage), size_t(attr.sharedSizeBytes),
              fe == cudaSuccess ? "ok" : cudaGetErrorString(fe), cutlass::cutlassGetStatusString(can),
              cutlass::cutlassGetStatusString(init), cutlass::cutlassGetStatusString(run),
              cudaGetErrorString(sync), correct, max_err);
}

int main() {
  cudaDeviceProp prop{};
  int optin = 0;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) { std::printf("device none\n"); return 2; }
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
  std::printf("device name=\"%s\" cc=%d.%d optin=%d\n", prop.name, prop.major, prop.minor, optin);
"""


def gpu_program(cfg: Config) -> str:
    """The C++ program that launches ``cfg``'s kernel (the engine's probe types plus a
    ``main``; see the module docstring). Problem: M = 2 x tile M, N = 2 x tile N, K = 2 x tile K."""
    if not isinstance(cfg, Config):
        raise BadInput("a GPU check runs configs (presets), not user types")
    m, n, k = cfg.mnk
    body = probe.render([cfg])
    grouped = "true" if cfg.kernel == "grouped" else "false"
    return (
        body + _MAIN + f"  cl_run<{aliases.NAMESPACE}0::GemmKernel, {grouped}>(0, {2 * m}, {2 * n}, {2 * k});\n"
        "  return 0;\n}\n"
    )


@dataclass
class GpuDevice:
    """The local GPU: ``name``, compute capability ``cc`` and ``arch`` (``sm90``)."""

    name: str
    cc: tuple[int, int]
    arch: str | None


@dataclass
class GpuRun:
    """One config on the GPU.

    Attributes:
        config: the config (its JSON); tool_verdict, tool_bytes, tool_stages: the engine's
            answer (verdict, kernel SharedStorage bytes, the mainloop's stage count).
        sizeof: nvcc's ``sizeof(GemmKernel::SharedStorage)``; static: the kernel's static
            shared memory (bytes); optin: the device's opt-in shared memory per block.
        can_implement, initialize, run, sync: CUTLASS / CUDA status strings.
        correct: the product matched the reference (None: not run).
        agree: the launch result and nvcc's sizeof agree with the engine's verdict and bytes.
        error: the build failed (compiler output, shortened), or None.
    """

    config: dict
    tool_verdict: str
    tool_bytes: int | None
    tool_stages: int | None = None
    sizeof: int | None = None
    static: int | None = None
    optin: int | None = None
    can_implement: str | None = None
    initialize: str | None = None
    run: str | None = None
    sync: str | None = None
    correct: bool | None = None
    max_error: float | None = None
    agree: bool = False
    error: str | None = None

    @property
    def launched(self) -> bool:
        """``initialize`` and ``run`` succeeded and the kernel finished without a CUDA error."""
        return self.initialize == "Success" and self.run == "Success" and self.sync == "no error"

    def describe(self) -> str:
        """One line: the engine's verdict and bytes, nvcc's sizeof, what the launch did."""
        st = f", {self.tool_stages} stages" if self.tool_stages is not None else ""
        tool = f"engine {self.tool_verdict.replace('_', ' ')} ({self.tool_bytes} B{st})"
        if self.error is not None:
            return f"{tool}; build or run failed: {self.error}"
        size = f"nvcc sizeof {self.sizeof} B" + ("" if self.sizeof == self.tool_bytes else " (differs)")
        if self.launched:
            what = "launched, product " + ("correct" if self.correct else "WRONG")
        else:
            what = f"initialize: {self.initialize}" + (
                "" if self.initialize != "Success" else f", run: {self.run}, {self.sync}"
            )
        return f"{tool}; {size}; static smem {self.static} B; {what}"


@dataclass
class GpuVerification:
    """What :func:`verify_on_gpu` found: the device and one :class:`GpuRun` per config."""

    device: GpuDevice
    runs: list[GpuRun] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        """Whether every run agrees with the engine (:attr:`GpuRun.agree`)."""
        return all(r.agree for r in self.runs)

    def to_dict(self) -> dict:
        """``{"tool": "gpu", "device", "agree", "runs"}`` (the ``verification`` object of
        ``layout --json --verify gpu``)."""
        return {
            "tool": "gpu",
            "device": plain(self.device),
            "agree": self.agree,
            "runs": [{**plain(r), "launched": r.launched} for r in self.runs],
        }

    def summary(self) -> str:
        """A few lines for the terminal: the device, then one line per config."""
        optin = next((r.optin for r in self.runs if r.optin), None)
        head = (
            f"GPU check on {self.device.name} (sm_{self.device.cc[0]}{self.device.cc[1]}"
            + (f", {optin} B opt-in shared memory per block" if optin else "")
            + "):"
        )
        lines = [head]
        for r in self.runs:
            lines.append(("  agrees: " if r.agree else "  DISAGREES: ") + r.describe())
        n_bad = sum(not r.agree for r in self.runs)
        lines.append(
            f"verdict holds on the GPU for all {len(self.runs)} config(s)"
            if not n_bad
            else f"{n_bad} of {len(self.runs)} config(s) disagree with the engine"
        )
        return "\n".join(lines)


def find_gpu() -> GpuDevice:
    """The first NVIDIA GPU here (``nvidia-smi``). Raises :class:`BadInput` when there is none."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise BadInput("GPU check: no NVIDIA GPU here (nvidia-smi is not on PATH)")
    try:
        proc = subprocess.run(
            [smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BadInput(f"GPU check: nvidia-smi did not answer ({exc})") from None
    line = next((ln for ln in proc.stdout.splitlines() if ln.strip()), "")
    if proc.returncode != 0 or "," not in line:
        raise BadInput("GPU check: nvidia-smi lists no GPU")
    name, cap = (x.strip() for x in line.rsplit(",", 1))
    try:
        major, minor = (int(x) for x in cap.split("."))
    except ValueError:
        raise BadInput(f"GPU check: nvidia-smi gives no compute capability for {name} ({cap!r})") from None
    return GpuDevice(name=name, cc=(major, minor), arch=CC_ARCH.get((major, minor)))


def _agree(run: GpuRun) -> bool:
    if run.error is not None or run.sizeof != run.tool_bytes:
        return False
    if run.tool_verdict in (Verdict.FITS, Verdict.EXACT_FIT):
        return run.launched and run.correct is True
    if run.tool_verdict == Verdict.OVER_CAPACITY:
        return run.initialize not in (None, "Success")
    return False


#: The program that builds and runs the checks (plain Python, so it runs where only nvcc is):
#: ``python3 runner.py DIR [--include ROOT]`` compiles every ``DIR/*.cu`` whose program is not
#: there yet, in parallel, runs each and writes ``DIR/results.json``.
RUNNER = r"""
import concurrent.futures, json, os, pathlib, subprocess, sys, time
d = pathlib.Path(sys.argv[1]).resolve()
meta = json.loads((d / "build.json").read_text())
include = sys.argv[sys.argv.index("--include") + 1] if "--include" in sys.argv else meta["include"]
include = str((d / include).resolve())
nvcc = meta["nvcc"] + ["-I" + include]
def build(cu):
    exe = cu.with_suffix("")
    t0 = time.time()
    if not exe.exists():
        p = subprocess.run(nvcc + [str(cu), "-o", str(exe)], capture_output=True, text=True)
        if p.returncode != 0:
            return cu.stem, {"error": (p.stderr or p.stdout)[-1500:]}
    t1 = time.time()
    try:
        r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return cu.stem, {"error": "the program ran past 120 s"}
    print(cu.stem, "built" if t1 - t0 > 1 else "", r.stdout.strip().splitlines()[-1:], flush=True)
    return cu.stem, {"stdout": r.stdout, "returncode": r.returncode, "stderr": r.stderr[-500:],
                     "build_s": round(t1 - t0, 1), "run_s": round(time.time() - t1, 1)}
jobs = int(meta.get("jobs") or os.cpu_count() or 1)
results = {}
with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
    for fut in concurrent.futures.as_completed([ex.submit(build, cu) for cu in sorted(d.glob("*.cu"))]):
        name, res = fut.result()
        results[name] = res
        (d / "results.json").write_text(json.dumps(results, indent=1))  # kept if stopped midway
"""


def write_checks(
    configs: list[Config],
    expected: list[tuple],
    include_root: Path,
    folder: Path,
    *,
    arch: str,
    jobs: int | None = None,
) -> None:
    """Write the checks of ``configs`` into ``folder``: one program per config
    (``c000.cu``, ... from :func:`gpu_program`), ``expected.json`` (the engine's verdict and
    kernel SharedStorage bytes, ``expected[i] = (verdict, bytes[, stages])``), ``build.json`` (the nvcc
    command line, ``-arch`` from :data:`~cutlass_layout.subjects.config.ARCHS`; the include root is
    given to the runner, or taken relative to the folder) and ``runner.py`` (:data:`RUNNER`)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (cfg, exp) in enumerate(zip(configs, expected, strict=True)):
        (folder / f"c{i:03d}.cu").write_text(gpu_program(cfg))
        rows.append(
            {
                "config": cfg.to_dict(),
                "label": cfg.label(),
                "verdict": exp[0],
                "bytes": exp[1],
                "stages": exp[2] if len(exp) > 2 else None,
            }
        )
    (folder / "expected.json").write_text(json.dumps(rows, indent=1))
    nvcc = ["nvcc", "-std=c++17", f"-arch={ARCHS[arch]}", "-O2", "-w", "--expt-relaxed-constexpr", "-DNDEBUG"]
    (folder / "build.json").write_text(json.dumps({"nvcc": nvcc, "jobs": jobs, "include": str(include_root)}))
    (folder / "runner.py").write_text(RUNNER)


_KV = re.compile(r'(\w+)=("[^"]*"|\S+)')


def read_checks(folder: Path, device: GpuDevice | None = None) -> GpuVerification:
    """The :class:`GpuVerification` of a folder :data:`RUNNER` has run (``results.json``
    beside ``expected.json``). Raises :class:`BadInput` when either is missing."""
    try:
        expected = json.loads((folder / "expected.json").read_text())
        results = json.loads((folder / "results.json").read_text())
    except (OSError, ValueError) as exc:
        raise BadInput(f"GPU checks in {folder}: {exc}") from None
    runs = []
    for i, exp in enumerate(expected):
        run = GpuRun(
            config=exp["config"], tool_verdict=exp["verdict"], tool_bytes=exp["bytes"], tool_stages=exp.get("stages")
        )
        res = results.get(f"c{i:03d}", {"error": "not built"})
        if "error" in res:
            lines = [ln for ln in res["error"].splitlines() if "error" in ln] or res["error"].splitlines()
            run.error = (lines[0] if lines else "build failed").strip()[:300]
        for line in res.get("stdout", "").splitlines():
            kv = {k: v.strip('"') for k, v in _KV.findall(line)}
            if line.startswith("device "):
                major, minor = (int(x) for x in kv.get("cc", "0.0").split("."))
                if device is None:
                    device = GpuDevice(name=kv.get("name", "?"), cc=(major, minor), arch=CC_ARCH.get((major, minor)))
                run.optin = int(kv.get("optin", 0)) or None
            elif line.startswith("kernel "):
                run.sizeof, run.static = int(kv["sizeof"]), int(kv["static"])
                run.can_implement, run.initialize = kv["can_implement"], kv["initialize"]
                run.run, run.sync = kv["run"], kv["sync"]
                run.correct = None if kv["correct"] == "-1" else kv["correct"] == "1"
                run.max_error = None if kv["max_err"] == "-1" else float(kv["max_err"])
        if run.error is None and run.sizeof is None:
            run.error = (
                f"the program printed no result (exit {res.get('returncode')}): {res.get('stderr', '').strip()[-200:]}"
            )
        run.agree = _agree(run)
        runs.append(run)
    return GpuVerification(device=device or GpuDevice("?", (0, 0), None), runs=runs)


def check_launchable(configs) -> None:
    """Refuse the configs :func:`gpu_program` cannot launch: user types, and the families whose
    arguments it does not fill (block-scaled A/B and their scale factors, sparse A and its
    metadata, blockwise FP8 scales, a D with scale factors). What it launches: dense and
    grouped GEMMs of plain element types (measured on SM90, README "--verify gpu").

    Raises:
        BadInput: naming the first config it cannot launch and why.
    """
    from ..subjects.config import SCALED_OUTPUTS

    for cfg in configs:
        if not isinstance(cfg, Config):
            raise BadInput("a GPU check launches preset configs; check your own type with nvcc (verify_nvcc)")
        why = (
            "block-scaled A/B (scale factors)"
            if cfg.block_scaled
            else "a sparse A"
            if cfg.kernel == "sparse"
            else "blockwise scales"
            if cfg.scales is not None
            else "a D with scale factors"
            if cfg.element_d in SCALED_OUTPUTS
            else None
        )
        if why is not None:
            raise BadInput(
                f"a GPU check launches GEMMs of plain element types; {cfg.label()} has "
                f"{why}, which its program does not fill (check it with nvcc: verify_nvcc)"
            )


def preflight(arch: str) -> GpuDevice:
    """The local GPU, checked for a GPU check of ``arch`` kernels.

    Raises:
        BadInput: no NVIDIA GPU here, a GPU of another arch than ``arch`` (an ``sm_90a``
            kernel image does not load on an SM120 part), or no nvcc on PATH.
    """
    device = find_gpu()
    if device.arch != arch:  # an sm_XXa image loads only on that compute capability
        have = f"sm_{device.cc[0]}{device.cc[1]}"
        raise BadInput(
            f"GPU check: the GPU here is {device.name} ({have}); {arch} kernels "
            "do not run on it (give the arch of the local GPU)"
        )
    if shutil.which("nvcc") is None:
        raise BadInput("GPU check: nvcc is not on PATH (it builds the check programs)")
    return device


def verify_on_gpu(
    configs: list[Config],
    expected: list[tuple],
    include_root: Path,
    *,
    arch: str,
    jobs: int | None = None,
    device: GpuDevice | None = None,
) -> GpuVerification:
    """Build and launch each config's kernel on the local GPU (see the module docstring).

    Args:
        configs: the configs: presets that :func:`check_launchable` accepts (it is not
            called here).
        expected: per config, the engine's ``(verdict, kernel SharedStorage bytes)``, or
            ``(verdict, bytes, stages)``.
        include_root: the CUTLASS include root the engine read (nvcc reads the same).
        arch: the configs' arch (``sm90``); the local GPU must be of it.
        jobs: programs built at once (default: the CPUs; each nvcc holds gigabytes: docs/performance.md).
        device: the result of :func:`preflight`, when already called.

    Returns:
        A :class:`GpuVerification`: the device and one :class:`GpuRun` per config, in
        order. Programs are built in a temporary folder of the cache (``gpu-checks/``),
        removed afterwards.

    Raises:
        BadInput: as :func:`preflight`; a cache folder that cannot be written.
    """
    device = device or preflight(arch)
    from ..core.cache import cache_dir

    try:
        work = Path(tempfile.mkdtemp(prefix="gpu-", dir=cache_dir("gpu-checks")))
    except OSError as exc:
        raise BadInput(f"GPU check: cannot make a folder in the cache: {exc.strerror or exc}") from None
    try:
        write_checks(configs, expected, include_root, work, arch=arch, jobs=jobs)
        from ..core.progress import step

        with step(
            f"building {len(configs)} kernel(s) with nvcc for {device.name} and launching them (about a minute each)"
        ):
            subprocess.run([sys.executable, str(work / "runner.py"), str(work)], stdout=subprocess.DEVNULL, check=True)
        return read_checks(work, device)
    finally:
        shutil.rmtree(work, ignore_errors=True)


__all__ = [
    "GpuDevice",
    "GpuRun",
    "GpuVerification",
    "RUNNER",
    "check_launchable",
    "find_gpu",
    "gpu_program",
    "preflight",
    "read_checks",
    "verify_on_gpu",
    "write_checks",
]
