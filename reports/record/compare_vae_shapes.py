"""Compare the VAE conv3d shapes recorded from diffusers' AutoencoderKLWan at 480x832 (9 frames)
with the hand-written ones of fixtures/shapes/workload_480x832.yaml (derived from the legacy
cards). Prints a Markdown table: each hand-written conv, the recorded conv with the same
weight, channels, frames and height, and how the width differs.

Run from the repository root: python reports/record/compare_vae_shapes.py
"""

from pathlib import Path

from ncu_classify.shapes.file import load_shapes
from ncu_classify.shapes.ops import Conv3dShape

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    hand = [s for s in load_shapes(ROOT / "fixtures/shapes/workload_480x832.yaml").stages["vae"]]
    rec = load_shapes(ROOT / "fixtures/shapes/recorded_wan_480x832.yaml").stages["vae"]
    recorded = [s for s in rec if isinstance(s, Conv3dShape)]
    print("| hand-written input | weight | recorded input | calls | width hand / recorded |")
    print("|---|---|---|---:|---|")
    matched = set()
    for shape in hand:
        assert isinstance(shape, Conv3dShape)
        twins = [r for r in recorded if r.weight == shape.weight and r.input[:4] == shape.input[:4]]
        twin = twins[0] if len(twins) == 1 else None
        if twin is not None:
            matched.add(id(twin))
        width = f"{shape.input[4]} / {twin.input[4]}" if twin else "no twin"
        print(
            f"| {shape.input} | {shape.weight} | {twin.input if twin else '-'} |"
            f" {twin.calls if twin else '-'} | {width} |"
        )
    rest = [r for r in rec if id(r) not in matched]
    print(f"\nRecorded VAE shapes without a hand-written twin: {len(rest)}")
    for r in rest:
        print(f"- {r.key()} (calls {r.calls}; {r.source})")


if __name__ == "__main__":
    main()
