"""A PyTorch program -> a shapes file (`ncu-classify record`); with replay/, the only step that
imports torch. The face is lazy, so that `program` (which runs the user's script) loads without it.

  recorder    the recording: its modes, the module hooks, what each call is
  function_mode  the torch function mode: each call handed to the recorder, marked
  warmup      `--start-at`: the program's warm-up runs unrecorded (its kernels: setup)
  calls       one typed call (linear, matmul, conv, SDPA, cast) -> a shape
  naming      the name a top module goes by in the code that runs it (its stage)
  device_ops  every other device op, as an `aten` shape
  dataflow    which recorded call made each tensor (for the chains)
  identity    how the dataflow knows a tensor again: its storage, a number per live object
  chains      the chains of device ops between two heavy ops, from the dataflow (no torch)
  chain_section  the chains as the shapes file's `chains:` section (no torch)
  regions     torch.compile'd modules and functions, recorded as they run (compiled shapes)
  region_graph  a compiled region's graph: its inputs' layouts, its region's name
  region_trace  a compiled region's graph traced to ATen ops, as a chain
  region_ops  the code a region ran eagerly between its graphs, op by op (torch.profiler)
  break_sites  where a region's graph breaks are (dynamo's graph-break log, read quietly)
  profiled_calls  an ATen op as the profiler saw it, made an `aten` call a replay can run
  cudagraphs  CUDA graphs: calls captured into a graph, its replays (their kernels, timed)
  timing      the program's kernel time per call (torch.profiler)
  totals      the recording's time ledger: per shape, uncovered, per stage
  shapes_document  a recording as the shapes file will hold it (no torch)
  threads     the program's other threads (their ops counted, not seen)
  document    a recording as a shapes file, validated as capture will
  program     the user's program run as `python` runs it
  streams     the program's standard streams, lent and taken back
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = ["Recorder", "recording", "shapes_yaml", "validated_document"]
__getattr__ = lazy_face(
    __name__,
    {
        "Recorder": "recorder",
        "recording": "recorder",
        "shapes_yaml": "document",
        "validated_document": "document",
    },
)
