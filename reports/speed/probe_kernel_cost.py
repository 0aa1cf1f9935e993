"""Probe: what makes ncu dearer per kernel in a capture than for a one-warp kernel (issue 21).

ncu with capture's metric list (12 passes) costs 0.328 s per profiled kernel for one one-warp
kernel launched again and again (`probe_pass_cost`), capture's real runs (Wan 14B: cuBLAS, cuDNN,
flash kernels) 0.435-0.441 s. Is the extra 0.1 s a one-off cost per distinct kernel function, the
run time or grid in every pass, or large code (cutlass cubins)? A CUDA program with no torch
(nvcc, sm_90, built in a temp dir) runs under capture's metric list and ncu argv (`ncu_argv`:
kernel replay, one NVTX range per launch, included by name) in these variants, at two counts N:

  same            one one-warp kernel launched N times (the known 0.33 s baseline)
  distinct        N distinct one-warp kernel functions, each launched once
  grid            one kernel, 132 x 8 CTAs x 256 threads, an FMA loop of about 1 ms, N times
  big_distinct    N distinct one-warp kernels of about 100 KB of SASS each (unrolled FMAs)
  big_same        one of those large kernels launched N times
  modules         N distinct one-warp kernels, each in its own module (its own .cu file)
  *_no_sass       distinct / big_distinct without the 4 SASS-instrumented FLOP counters (11
                  passes; the one-warp kernel paid 0.326 s with that list, 0.328 s with all)

As in capture, each kernel is launched once outside any range (its warm-up), then inside its own
range; the program times both (launch + cudaDeviceSynchronize). Seconds per kernel: the slope of
ncu's wall time between the counts (process start and first kernel drop out), and the median host
time of the profiled launches beside the first one's; each variant also runs once without ncu.
Variants run in the order above until `--budget` s are spent. On the GPU host, from the repository
root (3-4 minutes; `--dry-run` prints the commands, `--build-only` only builds):

    export PATH=/usr/local/cuda/bin:/opt/nvidia/nsight-compute/2025.3.1:$PATH
    python3 reports/speed/probe_kernel_cost.py --json $OUT/kernel_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from string import Template
from subprocess import PIPE, STDOUT

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ncu_classify.capture.ncu_cmd import ncu_argv

NVCC = ["nvcc", "-arch=sm_90", "-O3"]
NCU_DIR = "/opt/nvidia/nsight-compute/2025.3.1"
TIMEOUT_S = 90  # per process; 3 s per kernel at 30 kernels
GRID_CTAS = 132 * 8  # every SM of an H200, 8 CTAs of 256 threads each
ORDER = ("same", "distinct", "grid", "big_distinct", "big_same", "modules")
ORDER += ("distinct_no_sass", "big_distinct_no_sass")  # name: program mode [+ list without SASS]
VARIANTS = {v: (v.removesuffix("_no_sass"), v.endswith("_no_sass")) for v in ORDER}

MAIN = r"""#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nvtx3/nvToolsExt.h>
#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { fprintf(stderr, \
  "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); exit(1); } } while (0)
${TINY}
__global__ void grid(float *p) {  // about 1 ms of dependent FMAs on every SM
  float x = threadIdx.x * 1e-3f;
  for (int j = 0; j < ${ITERS}; j++) x = fmaf(x, 0.9999f, 1e-4f);
  p[blockIdx.x * blockDim.x + threadIdx.x] = x;
}
${DECLS}
static const void *tiny_k[] = {${TINY_TABLE}};
static const void *big_k[] = {${BIG_TABLE}};
static void (*mod_k[])(float *) = {${MOD_TABLE}};

static void launch(const char *mode, int i, float *p) {
  void *args[] = {&p};
  const void *f = tiny_k[0];
  dim3 grid_dim(1), block(32);
  if (!strcmp(mode, "modules")) { mod_k[i](p); CK(cudaGetLastError()); return; }
  if (!strcmp(mode, "distinct")) f = tiny_k[i];
  else if (!strcmp(mode, "big_distinct")) f = big_k[i];
  else if (!strcmp(mode, "big_same")) f = big_k[0];
  else if (!strcmp(mode, "grid")) { f = (const void *)grid; grid_dim = ${CTAS}; block = 256; }
  else if (strcmp(mode, "same")) { fprintf(stderr, "unknown mode %s\n", mode); exit(2); }
  CK(cudaLaunchKernel(f, grid_dim, block, args, 0, 0));
}

static double timed(const char *mode, int i, float *p) {  // launch + synchronize, host seconds
  auto t0 = std::chrono::steady_clock::now();
  launch(mode, i, p); CK(cudaDeviceSynchronize());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: %s MODE N OUT.json\n", argv[0]); return 2; }
  const char *mode = argv[1]; int n = atoi(argv[2]);
  if (n < 1 || n > ${MAXN}) { fprintf(stderr, "N must be 1..${MAXN}\n"); return 2; }
  static double warm[${MAXN}], prof[${MAXN}];  // host seconds per warm-up and profiled launch
  float *p;
  CK(cudaMalloc(&p, 4 << 20)); CK(cudaMemset(p, 0, 4 << 20)); CK(cudaDeviceSynchronize());
  for (int i = 0; i < n; i++) {
    warm[i] = timed(mode, i, p);  // the warm-up, outside any range: not profiled
    char name[32]; snprintf(name, sizeof name, "k%d", i);  // its range: k0, k1, ...
    nvtxRangePushA(name);
    prof[i] = timed(mode, i, p);
    nvtxRangePop();
  }
  CK(cudaFree(p));
  FILE *out = fopen(argv[3], "w");
  if (!out) { perror(argv[3]); return 1; }
  for (int i = 0; i < 2 * n; i++)  // {"warmup": [...], "profiled": [...]}
    fprintf(out, "%s%.6f", i == 0 ? "{\"warmup\": [" : i == n ? "], \"profiled\": [" : ", ",
            i < n ? warm[i] : prof[i - n]);
  fprintf(out, "]}\n");
  return fclose(out) ? 1 : 0;
}
"""
BIG = """__global__ void big_${I}(float *p) {
  float a = p[1023], x = p[threadIdx.x];
#pragma unroll
  for (int j = 0; j < ${FMAS}; j++) x = fmaf(x, a, (float)(j + ${I}));
  p[threadIdx.x] = x;
}
"""
MODULE = """__global__ void tinym_${I}(float *p) { p[threadIdx.x] += ${I}.0f + 1.0f; }
void launch_mod_${I}(float *p) { tinym_${I}<<<1, 32>>>(p); }
"""


def sources(maxn: int, fmas: int, iters: int, chunks: int) -> dict[str, tuple[str, bool]]:
    """File name -> (CUDA source, relocatable): main.cu (tiny and grid kernels, the driver),
    `chunks` files of large kernels linked into main's module (-rdc), one module per kernel of
    the `modules` variant (whole-program compilation: each .cu file its own fatbin)."""
    ids = range(maxn)
    each = lambda fmt, sep: sep.join(fmt.format(i=i, n=i + 1) for i in ids)  # noqa: E731
    main = Template(MAIN).substitute(
        TINY=each("__global__ void tiny_{i}(float *p) {{ p[threadIdx.x] += {n}.0f; }}", "\n"),
        DECLS=each("__global__ void big_{i}(float *p);\nvoid launch_mod_{i}(float *p);", "\n"),
        TINY_TABLE=each("(const void *)tiny_{i}", ", "),
        BIG_TABLE=each("(const void *)big_{i}", ", "),
        MOD_TABLE=each("launch_mod_{i}", ", "),
        **{"ITERS": iters, "CTAS": GRID_CTAS, "MAXN": maxn},
    )
    out = {"main.cu": (main, True)}
    for c in range(chunks):
        body = "".join(Template(BIG).substitute(I=i, FMAS=fmas) for i in ids if i % chunks == c)
        out[f"big_{c}.cu"] = (body, True)
    for i in ids:
        out[f"mod_{i}.cu"] = (Template(MODULE).substitute(I=i), False)
    return out


def build_commands(work: Path, files: dict[str, tuple[str, bool]]) -> list[list[str]]:
    """nvcc -c per file (run in parallel), then the link, last."""
    obj = lambda name: str(work / name.replace(".cu", ".o"))  # noqa: E731
    rdc = lambda name: ["-rdc=true"] if files[name][1] else []  # noqa: E731
    cmds = [[*NVCC, *rdc(name), "-c", str(work / name), "-o", obj(name)] for name in files]
    return [*cmds, [*NVCC, "-rdc=true", *map(obj, files), "-o", str(work / "kprobe")]]


def build(work: Path, files: dict[str, tuple[str, bool]]) -> dict:
    """Write the sources and compile them; the build's wall time (exits on a compile error)."""
    for name, (text, _) in files.items():
        (work / name).write_text(text)
    *compiles, link = build_commands(work, files)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        done = list(pool.map(lambda c: subprocess.run(c, capture_output=True, text=True), compiles))
    done.append(subprocess.run(link, capture_output=True, text=True))
    for cmd, result in zip([*compiles, link], done, strict=True):
        if result.returncode:
            sys.exit(f"build failed: {' '.join(cmd)}\n{result.stderr[-2000:]}")
    exe_bytes = (work / "kprobe").stat().st_size
    return {"build_s": round(time.perf_counter() - start, 2), "exe_bytes": exe_bytes}


def metric_list() -> tuple[list[str], str]:
    """Capture's metric list (`capture_metrics(None)`), and how it was got. Without pydantic
    the same names come from `core.metrics` with a stand-in for the one pydantic name it
    imports (`Field`, used only as type metadata there)."""
    try:
        from ncu_classify.capture.drill import capture_metrics

        return capture_metrics(None), "ncu_classify.capture.drill.capture_metrics(None)"
    except ModuleNotFoundError as exc:
        if exc.name != "pydantic":
            raise
    stub = types.ModuleType("pydantic")
    stub.Field = lambda *a, **k: None  # type: ignore[attr-defined]
    sys.modules["pydantic"] = stub
    try:
        from ncu_classify.core.metrics import capture_metric_names

        return capture_metric_names(), "core.metrics.capture_metric_names() (pydantic stand-in)"
    finally:
        del sys.modules["pydantic"]


def report_facts(report: Path) -> dict:
    """Kernels, distinct replay pass counts and median duration (us) of a report, if ncu's
    Python module (ncu_report, or ncu's extras/python) can read it."""
    ncu = Path(shutil.which("ncu") or NCU_DIR).resolve()
    sys.path.append(str((ncu.parent if ncu.is_file() else ncu) / "extras" / "python"))
    try:
        import ncu_report  # type: ignore[import-not-found]

        ctx = ncu_report.load_report(str(report))
    except Exception as exc:  # no module, no report: the timings stand without it
        return {"report": f"not read: {exc!r}"[:200]}
    passes, ns = set(), []
    for rng in map(ctx.range_by_idx, range(ctx.num_ranges())):
        for act in map(rng.action_by_idx, range(rng.num_actions())):
            m, t = map(act.metric_by_name, ("profiler__replayer_passes", "gpu__time_duration.sum"))
            passes.add(int(m.as_uint64()) if m is not None else -1)
            ns.append(t.as_double() if t is not None else float("nan"))
    median_us = round(statistics.median(ns) / 1000, 2) if ns else None
    return {"kernels": len(ns), "passes": sorted(passes), "duration_us_median": median_us}


def argv_for(exe: Path, mode: str, n: int, stem: Path, metrics: list[str] | None) -> list[str]:
    """The program's argv, under capture's ncu argv when `metrics` is given."""
    target = [str(exe), mode, str(n), f"{stem}.times.json"]
    if metrics is None:
        return target
    groups = [f"k{i}" for i in range(n)]
    return ncu_argv(ncu="ncu", report_stem=stem, metrics=metrics, groups=groups, target=target)


def run_once(exe: Path, mode: str, n: int, stem: Path, metrics: list[str] | None) -> dict:
    """One process (its own process group, killed whole after `TIMEOUT_S`): its wall time,
    exit code and the program's per-kernel host times."""
    start = time.perf_counter()
    argv = argv_for(exe, mode, n, stem, metrics)
    proc = subprocess.Popen(argv, stdout=PIPE, stderr=STDOUT, text=True, start_new_session=True)
    try:
        tail = proc.communicate(timeout=TIMEOUT_S)[0][-800:]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        tail = proc.communicate()[0][-700:] + f"\n(killed after {TIMEOUT_S} s)"
    row: dict = {"launches": n, "wall_s": round(time.perf_counter() - start, 3)}
    row["exit"], times = proc.returncode, Path(f"{stem}.times.json")
    if proc.returncode or not times.exists():
        row["tail"] = tail
    else:
        row.update(json.loads(times.read_text()))
    return row


def summary(name: str, runs: list[dict], bare: dict) -> dict:
    """Seconds per profiled kernel: wall slope between the counts, host-timed medians (of the
    larger run that finished)."""
    ok = [r for r in runs if "profiled" in r]
    out: dict = {"variant": name, "wall_s": [r["wall_s"] for r in runs]}
    if len(ok) == 2:
        extra = ok[1]["launches"] - ok[0]["launches"]
        out["slope_s"] = round((ok[1]["wall_s"] - ok[0]["wall_s"]) / extra, 4)
    if ok and len(ok[-1]["profiled"]) > 1:
        prof, warm = ok[-1]["profiled"], ok[-1]["warmup"]
        out["profiled_median_s"] = round(statistics.median(prof[1:]), 4)
        out["first_profiled_s"] = round(prof[0], 4)
        out["warmup_median_ms"] = round(1000 * statistics.median(warm[1:]), 2)
        out["first_warmup_ms"] = round(1000 * warm[0], 2)
    if "profiled" in bare:
        out["no_ncu_kernel_ms"] = round(1000 * statistics.median(bare["profiled"]), 3)
        out["no_ncu_first_warmup_ms"] = round(1000 * bare["warmup"][0], 2)
    return out


def main() -> None:
    """Build, run every variant until the budget is spent, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="where to write every raw figure")
    parser.add_argument("--counts", type=int, nargs=2, default=[10, 30], metavar=("FEW", "MANY"))
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--fmas", type=int, default=6400, help="unrolled FMAs per large kernel")
    parser.add_argument("--grid-iters", type=int, default=100_000, help="about 1 ms on an H200")
    parser.add_argument("--budget", type=float, default=190, help="start no variant after (s)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--build-only", action="store_true", help="build, print sizes, stop")
    args = parser.parse_args()
    t0, (few, many) = time.perf_counter(), sorted(args.counts)
    work = Path(tempfile.mkdtemp(prefix="kernel_cost_"))
    files = sources(many, args.fmas, args.grid_iters, max(1, min(many, os.cpu_count() or 4)))
    metrics, source = metric_list()
    lists = {False: metrics, True: [m for m in metrics if not m.startswith("smsp__sass")]}
    exe = work / "kprobe"
    if args.dry_run:
        cmds = build_commands(work, files)
        print("\n".join(" ".join(c) for c in [*cmds[:2], ["..."], *cmds[-2:]]))
        print(f"{len(files)} CUDA files, bytes:", {k: len(text) for k, (text, _) in files.items()})
        print(f"{len(metrics)} metrics from {source}; {len(lists[True])} without SASS counters")
        for name in args.variants:
            mode, cut = VARIANTS[name]
            for n in (few, many):
                argv = argv_for(exe, mode, n, work / f"{name}_{n}", lists[cut])
                at = argv.index("--metrics") + 1
                argv[at] = f"<{len(lists[cut])} metrics: {argv[at][:40]}...>"
                print(f"[{name} {n}]", " ".join(argv))
        return
    for tool in ("nvcc", *(() if args.build_only else ("ncu",))):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not on PATH: export PATH=/usr/local/cuda/bin:{NCU_DIR}:$PATH")
    result: dict = {"metrics_source": source, "metrics": len(metrics), "counts": [few, many]}
    result.update(fmas=args.fmas, grid_iters=args.grid_iters, grid_ctas=GRID_CTAS, work=str(work))
    result["cuda_module_loading"] = os.environ.get("CUDA_MODULE_LOADING", "(unset)")
    result.update(build(work, files))
    print(json.dumps(result), flush=True)
    if args.build_only:
        return
    for tool in ("nvcc", "ncu"):  # the last two lines of each one's --version
        done = subprocess.run([tool, "--version"], capture_output=True, text=True)
        result[f"{tool}_version"] = done.stdout.strip().splitlines()[-2:]
    result["variants"], rows = {}, []
    for name in args.variants:
        if time.perf_counter() - t0 > args.budget:
            result["variants"][name] = {"skipped": "budget spent"}
            continue
        mode, cut = VARIANTS[name]
        bare = run_once(exe, mode, many, work / f"{name}_bare", None)
        runs = [run_once(exe, mode, n, work / f"{name}_{n}", lists[cut]) for n in (few, many)]
        rows.append({**summary(name, runs, bare), **report_facts(work / f"{name}_{many}.ncu-rep")})
        got = {"metrics": len(lists[cut]), "bare": bare, "ncu": runs, "summary": rows[-1]}
        result["variants"][name] = got
        print(json.dumps(rows[-1]), flush=True)
        result["wall_s"] = round(time.perf_counter() - t0, 1)
        if args.json:  # after every variant: a run cut short keeps what it measured
            args.json.write_text(json.dumps(result, indent=1))
    keys = ["slope_s", "profiled_median_s", "first_profiled_s", "warmup_median_ms"]
    keys += ["no_ncu_kernel_ms", "passes", "duration_us_median"]
    print(f"\n{'variant':21}" + "".join(f"{k:>19}" for k in keys))
    for row in rows:
        print(f"{row['variant']:21}" + "".join(f"{row.get(k, '-')!s:>19}" for k in keys))
    skipped = [name for name, got in result["variants"].items() if "skipped" in got]
    print(f"total {result.get('wall_s')} s; skipped (budget): {skipped}; json: {args.json}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
