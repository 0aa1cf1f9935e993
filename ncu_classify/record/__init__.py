"""Record the op shapes a real PyTorch model runs, as a shapes file (`ncu-classify record`).

A `TorchFunctionMode` sees every torch function the user's code calls, at the level the shapes
file speaks (F.linear, F.conv3d, F.conv2d, F.scaled_dot_product_attention, matmul, casts),
before any device-specific decomposition, so a CPU run records what a GPU run would replay.
Global module hooks keep the stack of modules being run, so each call knows its module path
(`transformer.blocks.3.attn1.to_q`) and from it its stage. Identical shapes merge, counting
calls; calls of ops the replay cannot run are counted by name, never dropped silently. With
`inputs_dir`, the first inputs of each distinct shape are saved (within a byte budget) so that
capture can replay the real tensors.

This package and `replay/` are the only parts of the tool that import torch; the face is
lazy, so that `program` (which runs the user's script, no torch) loads without it.
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
