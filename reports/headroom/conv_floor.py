"""Are the cuDNN conv3d kernels at the floor? Per VAE conv shape of the committed comparison
(fp32 NCDHW with TF32 against bf16 channels_last_3d, 480x832, H200) and of the recorded Wan 2.1
14B decode, the measured time, the time with every kernel at its own roof, and the op's speed of
light, per call and per decode. Prints Markdown.

    python reports/headroom/conv_floor.py > reports/headroom/conv_floor.md
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.cards.files import load_card_file  # noqa: E402
from ncu_classify.cards.headroom import CardHeadroom, card_headroom  # noqa: E402
from ncu_classify.cards.model import Card  # noqa: E402


def convs(path: str) -> list[tuple[Card, CardHeadroom]]:
    """The timed conv cards of the VAE stage of a cards file, with their headroom; a card
    without a kernel roof or a speed of light (unknown, never 0) stops the script."""
    cards = load_card_file(ROOT / path)
    out = []
    for card in cards.cards:
        room = card_headroom(card)
        if card.stage == "vae" and "conv" in card.op and room is not None:
            if room.kernel_roof_us is None or room.sol_us is None or room.sol_pct is None:
                raise SystemExit(f"{path}: {card.group}: no kernel roof or speed of light")
            out.append((card, room))
    return out


def _shape(group: str) -> str:
    return group.split(":")[2]


def comparison() -> list[str]:
    """Per conv shape: fp32 TF32 NCDHW and bf16 channels_last_3d side by side (us per call)."""
    fp32 = {_shape(c.group): (c, r) for c, r in convs("reports/diff/cards/w480_gpu0.json")}
    bf16 = {_shape(c.group): (c, r) for c, r in convs("reports/diff/cards/vae_bf16_cl3d.json")}
    lines = [
        "| conv shape | fp32 TF32 NCDHW: measured, at kernel roofs, SOL (SOL %) |"
        " bf16 channels_last_3d: measured, at kernel roofs, SOL (SOL %) | bf16 dominant kernel |",
        "| --- | --- | --- | --- |",
    ]
    totals = [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    for shape, (card, room) in fp32.items():
        other = bf16.get(shape)
        cells = []
        for side, (c, r) in enumerate([(card, room), other] if other else [(card, room)]):
            cells.append(f"{r.measured_us:,.1f}, {r.kernel_roof_us:,.1f}, {r.sol_us:,.1f}"
                         f" ({r.sol_pct:.1f} %)")  # fmt: skip
            for i, v in enumerate((r.measured_us, r.kernel_roof_us or 0.0, r.sol_us or 0.0)):
                totals[side][i] += v * c.calls
        kernel = (other[0].dominant_kernel or "-")[:40] if other else "-"
        lines.append(f"| {shape} | {' | '.join(cells)} | `{kernel}` |")
    per = [f"{t[0]:,.1f}, {t[1]:,.1f}, {t[2]:,.1f} ({100 * t[2] / t[0]:.1f} %)" for t in totals]
    lines.append(f"| **decode (17 conv shapes)** | **{per[0]}** | **{per[1]}** | |")
    return lines


def recorded() -> list[str]:
    """The recorded Wan 2.1 14B decode: every conv card x its calls, the ten largest."""
    rows = sorted(convs("reports/record/cards_wan14b_every_op_480x832.json"),
                  key=lambda cr: -cr[1].measured_us * cr[0].calls)  # fmt: skip
    lines = [
        "| conv shape (recorded) | calls | measured | at kernel roofs | SOL | SOL % |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = [0.0, 0.0, 0.0]
    for card, room in rows:
        values = (room.measured_us, room.kernel_roof_us or 0.0, room.sol_us or 0.0)
        total = [t + v * card.calls for t, v in zip(total, values, strict=True)]
    for card, room in rows[:10]:
        lines.append(
            f"| {_shape(card.group)} | {card.calls} | {room.measured_us * card.calls:,.1f} |"
            f" {(room.kernel_roof_us or 0.0) * card.calls:,.1f} |"
            f" {(room.sol_us or 0.0) * card.calls:,.1f} |"
            f" {room.sol_pct or 0.0:.1f} % |"
        )
    share = 100 * total[2] / total[0]
    lines.append(
        f"| **all {len(rows)} conv shapes of the decode** | | **{total[0]:,.1f}** |"
        f" **{total[1]:,.1f}** | **{total[2]:,.1f}** | **{share:.1f} %** |"
    )
    return lines


def main() -> None:
    """Both tables, us (per call in the first, per decode in the second)."""
    print("## VAE conv3d, 480x832 on the H200: fp32 NCDHW with TF32 against bf16 channels_last_3d")
    print("\nus per call (each shape runs once per decode here)\n")
    print("\n".join(comparison()))
    print("\n## The recorded Wan 2.1 14B decode (fp32 NCDHW, TF32 by cuDNN's default): its convs\n")
    print("us per decode (x calls), the ten largest shapes and the total\n")
    print("\n".join(recorded()))


if __name__ == "__main__":
    main()
