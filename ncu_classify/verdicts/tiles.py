"""Tiles of a persistent grid: how many output tiles a kernel had to spread over its CTAs,
where the kernel name gives the tile and the shape gives the GEMM it computes.

cuDNN's implicit-GEMM convolutions name their tile `tilesize<M>x<N>x<K>`, M over output
pixels (batch x output depth x height x width) and N over output channels; a persistent grid of
`grid` CTAs then runs ceil(tiles / grid) rounds, the last one `tiles mod grid` CTAs wide. That
is the finding behind SMs idle in a grid of one full wave: too few tiles, or a last round that
leaves most CTAs without work. Other kernels (cuBLAS nvjet names a tile, but not which GEMM
side it spans after PyTorch's transposition) get no count rather than a guess.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

_TILE = re.compile(r"implicit_gemm.*?_tilesize(\d+)x(\d+)x\d+")


def conv_gemm(shape_parameters: Mapping[str, Any]) -> tuple[int, int] | None:
    """(M, N) of a convolution's implicit GEMM from its output [batch, channels, *spatial]."""
    output = shape_parameters.get("output")
    if not isinstance(output, list) or len(output) < 3:
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in output):
        return None
    return output[0] * math.prod(output[2:]), output[1]


def tile_note(
    kernel_name: str, shape_parameters: Mapping[str, Any], grid: float | None
) -> str | None:
    """Tiles per CTA of a persistent implicit-GEMM conv, or None where the name or the shape
    does not tell."""
    match = _TILE.search(kernel_name)
    gemm = conv_gemm(shape_parameters)
    if match is None or gemm is None or grid is None or grid < 1:
        return None
    tile_m, tile_n = int(match.group(1)), int(match.group(2))
    tiles = math.ceil(gemm[0] / tile_m) * math.ceil(gemm[1] / tile_n)
    ctas = int(grid)
    rounds, last = divmod(tiles, ctas)
    text = (
        f"{tiles} output tiles of {tile_m}x{tile_n} (GEMM {gemm[0]} x {gemm[1]}) over {ctas}"
        f" CTAs: {tiles / ctas:.2f} per CTA"
    )
    if tiles < ctas:
        return text + f"; {ctas - tiles} CTAs have no tile"
    if last:
        return text + f"; the last of {rounds + 1} rounds keeps {last} of {ctas} CTAs busy"
    return text + "; every round full: the idle time is uneven tile cost"
