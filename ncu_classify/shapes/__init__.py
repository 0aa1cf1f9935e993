"""The shapes-file grammar: which op shapes a capture replays, torch-free (record/ writes it,
capture/ and replay/ read it, verdicts/ reads group ids back with it).

- ops: the typed op shapes (linear, conv2d/3d, cast), their group ids and nominal work
- attention: the attention shape, with the mask, dropout and scale the program passed
- layouts: a typed shape's inputs as the program laid them out (strides, offset), its mask
- aten: recorded device ops (`aten` shapes): tensor layouts, arguments, nominal bytes
- recorded: what a recording adds (`recorded:`: per-stage totals, older op lists)
- chains: the chains of device ops a recording found (`chains:`), each an op list with links
- chain_shape: a chain as a shape capture replays, eagerly or compiled (`try`'s fusion move)
- file: the whole file (settings, stages, entries with group ids) and its loader
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = ["ShapeEntry", "ShapesFile", "group_id", "load_shapes", "read_shapes"]
__getattr__ = lazy_face(
    __name__,
    {
        "ShapeEntry": "file",
        "ShapesFile": "file",
        "group_id": "file",
        "load_shapes": "file",
        "read_shapes": "file",
    },
)
