"""Real capture on a GPU host with ncu (skipped elsewhere; run on the H200 in a session)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import CLI

pytestmark = pytest.mark.gpu


def test_capture_then_classify_on_the_gpu(tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(
        "stages:\n  dit:\n    - {op: linear, M: 4680, N: 5120, K: 5120, dtype: bf16, bias: true}\n"
        "  output:\n    - {op: cast, shape: [1, 3, 13, 480, 832], from: fp32, to: bf16}\n"
    )
    raw = tmp_path / "raw"
    cli = [*CLI]
    proc = subprocess.run(
        [*cli, "capture", "--shapes", str(shapes), "-o", str(raw)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = json.loads((raw / "manifest.json").read_text())
    assert [(s["status"], s["kernels"]) for s in manifest["shapes"]] == [("ok", 1), ("ok", 1)]
    assert all(p < 20 for s in manifest["shapes"] for p in s["replay_passes"])
    # Inputs are drawn on the GPU by the hashed generator: the recipe's sha256, as on a CPU.
    from ncu_classify.replay.inputs import HashedDraws
    from ncu_classify.shapes.ops import LinearShape

    linear = LinearShape.model_validate(
        {"op": "linear", "M": 4680, "N": 5120, "K": 5120, "dtype": "bf16", "bias": True}
    )
    recipe = HashedDraws(0, "cpu")
    recipe.specs = [(tuple(d), t, s) for d, t, s in linear.inputs()]
    assert manifest["input_draws"] == "hashed_normal_v1"
    assert manifest["shapes"][0]["input_sha256"] == recipe.finish([])
    phases = [set(s["replay_phases"]) for s in manifest["shapes"]]
    assert phases == [{"inputs", "warmup", "measured"}] * 2
    cards_path = tmp_path / "cards.json"
    proc = subprocess.run(
        [*cli, "classify", str(raw), "-o", str(cards_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    cards = json.loads(cards_path.read_text())["cards"]
    assert [c["primary"] for c in cards] == ["compute_bound", "dram_bandwidth_bound"]
    assert cards[0]["kernels"][0]["metrics"]["sm_pct"] >= 60
    assert cards[0]["kernels"][0]["missing_metrics"] == []


def test_hashed_inputs_on_the_gpu_are_the_cpu_bytes() -> None:
    """The generator's bytes on the H200 equal a CPU's, across a chunk boundary and per dtype."""
    import hashlib

    import torch

    from ncu_classify.replay.inputs import HashedDraws

    specs = [([40_000_000], "fp32", 1.0), ([3, 1000, 777], "bf16", 0.125), ([5000], "fp16", 2.0)]
    digests = []
    for device in ("cuda", "cpu"):
        draws = HashedDraws(3, device)
        made = [draws(*spec).cpu().contiguous().view(torch.uint8).numpy() for spec in specs]
        digests.append([hashlib.sha256(m.tobytes()).hexdigest() for m in made])
    assert digests[0] == digests[1]


def test_record_on_the_gpu_then_capture_replays_the_recorded_inputs(tmp_path: Path) -> None:
    """A program run on the GPU under `record --save-inputs`; capture replays those tensors
    (their sha256 is the card's) and says so."""
    import torch

    script = tmp_path / "infer.py"
    script.write_text(
        "import torch\n"
        "torch.manual_seed(1)\n"
        "layer = torch.nn.Linear(5120, 5120, device='cuda', dtype=torch.bfloat16)\n"
        "x = torch.randn(4680, 5120, device='cuda', dtype=torch.bfloat16)\n"
        "for _ in range(3):\n"
        "    x = layer(x)\n"
    )
    shapes, inputs = tmp_path / "shapes.yaml", tmp_path / "inputs"
    cli = [*CLI]
    argv = ["record", "-o", str(shapes), "--save-inputs", str(inputs), "--", "python", str(script)]
    proc = subprocess.run([*cli, *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "calls: 3" in shapes.read_text() and 'device: "cuda"' in shapes.read_text()
    [saved] = list(inputs.glob("*.pt"))
    tensors = torch.load(saved, weights_only=True)
    raw = tmp_path / "raw"
    proc = subprocess.run(
        [*cli, "capture", "--shapes", str(shapes), "-o", str(raw)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    shapes_seen = json.loads((raw / "manifest.json").read_text())["shapes"]
    [shape] = [s for s in shapes_seen if s["op"] == "aten.linear.default"]
    assert (shape["status"], shape["input_source"], shape["calls"]) == ("ok", "recorded", 3)
    # the inputs' factories are device ops of their own, replayed from the seed
    assert {s["op"] for s in shapes_seen} == {"aten.linear.default", "aten.randn.default"}
    import hashlib

    digest = hashlib.sha256()
    for t in tensors:
        digest.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    assert shape["input_sha256"] == digest.hexdigest()


def test_every_device_op_is_timed_captured_and_covered(tmp_path: Path) -> None:
    """A program of elementwise ops, a reduction, an in-place op, a strided copy and a linear:
    record times every call on the GPU (the shapes' real time adds up to the stage's), capture
    replays every op, and the cards cover the whole program's kernel time."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import torch\n"
        "x = torch.randn(4096, 4096, device='cuda')\n"
        "w = torch.randn(1024, 4096, device='cuda')\n"
        "for _ in range(3):\n"
        "    y = (x * 2 + 1).relu()\n"
        "    y.add_(1.0)\n"
        "    s = y.sum(dim=0)\n"
        "    t = y.t().contiguous()\n"
        "    z = torch.nn.functional.linear(t, w)\n"
        "torch.cuda.synchronize()\n"
    )
    shapes = tmp_path / "shapes.yaml"
    argv = ["record", "-o", str(shapes), "--", "python", str(script)]
    proc = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from ncu_classify.shapes.file import load_shapes

    loaded = load_shapes(shapes)
    assert loaded.recorded is not None and loaded.recorded.totals is not None
    totals = loaded.recorded.totals
    assert totals.basis == "kernel_time" and totals.uncovered == []
    main = totals.stages["main"]
    entries = loaded.entries()
    assert all(e.shape.real_us and e.shape.real_us > 0 for e in entries)
    summed = sum((e.shape.real_us or 0) * e.shape.calls for e in entries)
    assert main.kernel_us and abs(summed - main.kernel_us) <= 0.01 * main.kernel_us
    ops = {e.shape.aten_op() for e in entries}
    assert {"aten.mul.Tensor", "aten.sum.dim_IntList"} <= ops
    assert any(op.startswith("aten.add_.") for op in ops)  # the in-place add
    assert "aten.clone.default" in ops  # the strided copy of .contiguous()
    from ncu_classify.cards.kernel_names import is_copy

    for entry in entries:  # the kernels each shape launched, by name (issue 41, item 4)
        names = entry.shape.real_kernel_names or {}
        assert abs(sum(names.values()) - (entry.shape.real_kernels or 0)) < 0.01, entry.group
    clone = next(e.shape for e in entries if e.shape.aten_op() == "aten.clone.default")
    assert any(is_copy(name) for name in clone.real_kernel_names or {})
    raw = tmp_path / "raw"
    proc = subprocess.run(
        [*CLI, "capture", "--shapes", str(shapes), "-o", str(raw), "--one-process"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    cards_path = tmp_path / "cards.json"
    proc = subprocess.run(
        [*CLI, "classify", str(raw), "-o", str(cards_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    cards = json.loads(cards_path.read_text())
    [coverage] = cards["coverage"]
    assert coverage["stage"] == "main" and coverage["coverage_pct"] == 100.0
    # the replayed kernels take about what the program's did (4096^2 fp32 elementwise ops
    # stream 64-128 MB: no cache warmth to speak of)
    assert 0.7 < coverage["replayed_us"] / coverage["real_us"] < 1.4
    assert all(card["real_kernel_names"] for card in cards["cards"])  # handed on by capture


def test_drill_down_captures_the_unsettled_shapes_and_merges_into_their_cards(
    tmp_path: Path,
) -> None:
    """capture, classify under rules/roofline.yaml, drill down (the unresolved K=144 GEMM and
    the class named), classify both folders: the drilled cards keep their first verdict and
    metrics, each kernel gets a drill-down whose shares add to 100 %, in at most 20 passes."""
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(
        "stages:\n  dit:\n    - {op: linear, M: 4680, N: 5120, K: 144, dtype: bf16, bias: true}\n"
        "    - {op: linear, M: 4680, N: 5120, K: 5120, dtype: bf16, bias: true}\n"
        "  output:\n    - {op: cast, shape: [1, 3, 13, 480, 832], from: fp32, to: bf16}\n"
    )
    raw, drill, cards, merged = (tmp_path / n for n in ("raw", "drill", "c.json", "m.json"))
    rules = ["--rules", "rules/roofline.yaml"]

    def run(*args: str) -> None:
        done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]

    run("capture", "--shapes", str(shapes), "-o", str(raw), "--one-process")
    run("classify", str(raw), "-o", str(cards), *rules)
    first = {c["group"]: c for c in json.loads(cards.read_text())["cards"]}
    run("capture", "--shapes", str(shapes), "-o", str(drill), "--one-process",
        "--drill-down", str(cards), "--drill-class", "dram_bandwidth_bound")  # fmt: skip
    manifest = json.loads((drill / "manifest.json").read_text())
    assert set(manifest["drill_down"]["selected"]) <= set(first)
    assert all(p <= 20 for s in manifest["shapes"] for p in s["replay_passes"])
    run("classify", str(raw), str(drill), "-o", str(merged), *rules)
    after = {c["group"]: c for c in json.loads(merged.read_text())["cards"]}
    assert list(after) == list(first)
    for group, why in manifest["drill_down"]["selected"].items():
        card, before = after[group], first[group]
        assert card["primary"] == before["primary"]
        # settled where the first verdict was open; a class named is drilled, not overruled
        assert ("settled" in card) == (why in ("unresolved", "borderline"))
        for kernel, old in zip(card["kernels"], before["kernels"], strict=True):
            assert kernel["metrics"] == old["metrics"]
            shares = [s["share_pct"] for s in kernel["drill_down"]["stalls"]]
            assert abs(sum(shares) - 100) < 0.1
            assert kernel["drill_down"]["source"]["replay_passes"] <= 20


def test_repeat_measures_every_shape_n_times_on_the_gpu(tmp_path: Path) -> None:
    """capture --repeat 3: the counters launch and two duration-only launches per shape (a
    GEMM, a multi-kernel fp32 conv3d, a cast), each in its `repeat#N` range; the cards carry
    the spreads and the stability, and nothing is left pending."""
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(
        "stages:\n  dit:\n    - {op: linear, M: 4680, N: 5120, K: 5120, dtype: bf16, bias: true}\n"
        "  vae:\n    - {op: conv3d, input: [1, 96, 3, 120, 52], weight: [96, 96, 3, 3, 3],"
        " dtype: fp32}\n"
        "  output:\n    - {op: cast, shape: [1, 3, 13, 480, 832], from: fp32, to: bf16}\n"
    )
    raw = tmp_path / "raw"
    proc = subprocess.run(
        [*CLI, "capture", "--shapes", str(shapes), "-o", str(raw), "--one-process",
         "--repeat", "3"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = json.loads((raw / "manifest.json").read_text())
    assert [b["kind"] for b in manifest["batches"]] == ["counters", "times"]
    assert [(s["status"], s["times_status"], s["repeats"]) for s in manifest["shapes"]] == [
        ("ok", "ok", 3)
    ] * 3
    assert manifest["host"]["clock_control"] == "none"
    cards_path = tmp_path / "cards.json"
    proc = subprocess.run(
        [*CLI, "classify", str(raw), "-o", str(cards_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    cards = json.loads(cards_path.read_text())["cards"]
    for card in cards:
        measured = card["measurement"]
        assert measured["repeats"] == 3 and measured["notes"] == [], card["group"]
        assert measured["summed_kernel_us"]["n"] == 3
        assert measured["stability"]["verdict"] in ("stable", "unstable")
        # the repeats time the same work: within 15 % of the counters launch
        first = card["summed_kernel_us"]
        assert abs(measured["summed_kernel_us"]["mean"] / first - 1) < 0.15, card["group"]


def test_try_measures_alternatives_beside_the_original(tmp_path: Path) -> None:
    """`try` on the smoke cards: the cuDNN cross-attention beside flash and efficient (both
    measured, their outputs within bf16's tolerance; FlashAttention-3 listed as failed where
    it is not installed), and the output cast beside Inductor's kernel (exact)."""
    from ncu_classify.tries.results import load_results

    root = Path(__file__).resolve().parents[2]
    cards, shapes = root / "reports" / "smoke_h200_cards.json", root / "fixtures/shapes/smoke.yaml"
    found = {}
    for stage in ("attention", "output"):
        out = tmp_path / stage
        proc = subprocess.run(
            [*CLI, "try", str(cards), "--shapes", str(shapes), "-o", str(out), "--stage", stage,
             "--top", "1", "--repeat", "3"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        found[stage] = load_results(out / "tries.json").moves[0]
    attention = found["attention"]
    assert attention.original.status == "ok" and attention.original.kernels
    measured = {a.label: a for a in attention.alternatives if a.status == "ok"}
    assert {"sdpa_flash", "sdpa_efficient"} <= set(measured)
    for alt in measured.values():
        assert alt.time is not None and alt.time.n == 3 and alt.saving_ci95_us is not None
        assert alt.numerics is not None and alt.numerics.compared and alt.numerics.within
        assert alt.numerics.tolerance_of == "bf16"
    failed = [a for a in attention.alternatives if a.status != "ok"]
    assert all(a.status.startswith("failed: unsupported") for a in failed)
    cast = found["output"]
    (compiled,) = cast.alternatives
    assert compiled.label == "compiled" and compiled.numerics is not None
    assert compiled.numerics.compared and compiled.numerics.max_abs_error == 0.0


def test_record_attributes_a_cuda_graph_s_replays_to_the_graph(tmp_path: Path) -> None:
    """A program that captures a linear + SiLU into a CUDA graph (after a warm-up call) and
    replays it 5 times, then a second graph holding a linear of a size never run eagerly,
    replayed twice, under `record --save-inputs`: the capture's calls are not calls of their
    own; the first graph's replays are spread over its shapes (the linear: 1 + 5 calls, its
    kernels per call those of the warm-up), the second stays one uncovered line of 2 calls
    with its kernels and time (not "outside any recorded call"); both listed."""
    from ncu_classify.shapes.file import load_shapes

    script = tmp_path / "graphed.py"
    script.write_text(
        "import torch\n"
        "layer = torch.nn.Linear(1024, 1024, device='cuda')\n"
        "x = torch.randn(512, 1024, device='cuda')\n"
        "with torch.no_grad():\n"
        "    torch.nn.functional.silu(layer(x))\n"
        "    torch.cuda.synchronize()\n"
        "    graph = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(graph):\n"
        "        y = torch.nn.functional.silu(layer(x))\n"
        "    for _ in range(5):\n"
        "        graph.replay()\n"
        "    x2 = torch.randn(256, 1024, device='cuda')\n"
        "    other = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(other):\n"
        "        z = layer(x2)\n"
        "    other.replay(); other.replay()\n"
        "    torch.cuda.synchronize()\n"
    )
    shapes = tmp_path / "shapes.yaml"
    argv = ["record", "-o", str(shapes), "--save-inputs", str(tmp_path / "in")]
    proc = subprocess.run(
        [*CLI, *argv, "--", "python", str(script)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "CUDA graphs: 2 graphs, 7 replays, 1 spread over their shapes" in proc.stdout
    recorded = load_shapes(shapes)
    linears = {s.M: s for st in recorded.stages.values() for s in st if s.op == "linear"}
    assert list(linears) == [512]  # the M=256 linear ran only inside the second graph
    assert linears[512].calls == 6 and (linears[512].real_kernels or 0) >= 1
    assert recorded.recorded is not None and recorded.recorded.totals is not None
    first, second = recorded.recorded.cuda_graphs
    assert (first.replays, first.attributed, second.replays, second.attributed) == (
        5, True, 2, False,
    )  # fmt: skip
    assert sum(first.captured.values()) >= 2 and (first.kernel_us or 0) > 0
    items = {u.name: u for u in recorded.recorded.totals.uncovered}
    assert not [name for name in items if name.startswith("(CUDA graph 0,")]
    [graph] = [u for name, u in items.items() if name.startswith("(CUDA graph 1,")]
    assert graph.calls == 2 and (graph.kernels or 0) >= 2 and (graph.kernel_us or 0) > 0
    assert "(kernels outside any recorded call)" not in items


@pytest.mark.parametrize("compiling", ["block.compile()", "block = torch.compile(block)"])
def test_record_names_a_compiled_region_s_eager_code_op_by_op(
    tmp_path: Path, compiling: str
) -> None:
    """A compiled block whose conv is followed by code dynamo runs eagerly (a function it may
    not trace: a pad, a cat and a mask; code after a plain `graph_break()` is compiled into a
    second graph, not run eagerly): the kernels of that code are `aten` shapes of the stage
    (from torch.profiler), each with its calls and kernels; the region's uncovered eager work
    is gone, and the stage is covered whole. The mask's Python number, which the profile keeps
    as a 0-d float64 tensor, is a number (its kernel's name has no `double`), so the mask
    replays as float32."""
    from ncu_classify.shapes.aten import AtenShape
    from ncu_classify.shapes.file import load_shapes

    script = tmp_path / "broken.py"
    script.write_text(
        "import torch\n"
        "import torch.nn.functional as F\n"
        "@torch._dynamo.disable\n"
        "def cached(h):\n"
        "    h = torch.cat([h[:, :, -1:], F.pad(h, (0, 0, 0, 0, 1, 0))], dim=2)\n"
        "    return h * ((h > 0) * 0.5)\n"
        "class Block(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.norm = torch.nn.GroupNorm(8, 64)\n"
        "        self.conv = torch.nn.Conv3d(64, 64, 3, padding=1)\n"
        "    def forward(self, x):\n"
        "        return cached(self.conv(F.silu(self.norm(x))))\n"
        "block = Block().cuda()\n"
        f"{compiling}\n"
        "x = torch.randn(1, 64, 8, 64, 64, device='cuda')\n"
        "with torch.no_grad():\n"
        "    for _ in range(3):\n"
        "        block(x)\n"
        "    torch.cuda.synchronize()\n"
    )
    shapes = tmp_path / "shapes.yaml"
    proc = subprocess.run(
        [*CLI, "record", "-o", str(shapes), "--", "python", str(script)],
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    recorded = load_shapes(shapes)
    eager = [s for s in recorded.stages["block"] if s.op == "aten" and s.source == "block"]
    told = {s.overload: s for s in eager}  # type: ignore[union-attr]
    seen = (shapes.read_text()[-3000:], proc.stdout[-1000:])  # (failed once on the H200)
    assert {"aten.cat.default", "aten.constant_pad_nd.default"} <= set(told), seen
    assert all(s.calls == 3 and (s.real_kernels or 0) >= 1 for s in told.values())
    ops = [s for s in eager if isinstance(s, AtenShape) and s.overload == "aten.mul.Tensor"]
    masks = [s.args[1] for s in ops if s.tensors()[0].dtype == "bool"]
    assert masks == [{"number": "float64"}]
    assert recorded.recorded is not None and recorded.recorded.totals is not None
    items = [u for u in recorded.recorded.totals.uncovered if "compiled region" in u.name]
    assert all((u.kernel_us or 0) == 0 for u in items), items
