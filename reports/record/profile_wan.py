"""The independent check of record's kernel time: the program of fixtures/models/record_wan.py
(same models, same inputs, one DiT step and one decode) under plain torch.profiler, with a
range around the transformer call and one around the VAE decode; kernel time per range is
torch's own attribution (`device_time_total` of the range's event), memory copies and sets
apart. Run on the GPU host from the repository root:

    python3 reports/record/profile_wan.py --height 480 --width 832 --frames 9 \\
        --dit wan2.1_t2v_14b_transformer.json
"""

import argparse
import json
from pathlib import Path

import torch
from diffusers import AutoencoderKLWan, WanTransformer3DModel
from torch.profiler import ProfilerActivity, profile, record_function

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--width", type=int, default=832)
    parser.add_argument("--frames", type=int, default=9)
    parser.add_argument("--dit", default="wan2.1_t2v_1.3b_transformer.json")
    parser.add_argument("--text-tokens", type=int, default=512)
    args = parser.parse_args()
    torch.manual_seed(0)
    with torch.device("cuda"):
        transformer = WanTransformer3DModel(**json.loads((MODELS / args.dit).read_text()))
        transformer = transformer.to(torch.bfloat16).eval()
        vae = AutoencoderKLWan(**json.loads((MODELS / "wan2.1_vae.json").read_text())).eval()
    shape = (1, 16, (args.frames - 1) // 4 + 1, args.height // 8, args.width // 8)
    latents = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    text = torch.randn(1, args.text_tokens, 4096, device="cuda", dtype=torch.bfloat16)
    timestep = torch.tensor([999], device="cuda")
    torch.cuda.synchronize()
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("whole"):
            with record_function("dit"):
                noise = transformer(latents, timestep, text, return_dict=False)[0]
            latents = (latents - noise).float()
            with record_function("vae_decode"):
                video = vae.decode(latents, return_dict=False)[0]
            (video * 127.5 + 127.5).clamp(0, 255).to(torch.uint8)
        torch.cuda.synchronize()
    events = prof.events()
    names = ("whole", "dit", "vae_decode")
    cpu = torch.autograd.DeviceType.CPU
    ranges = {e.name: e for e in events if e.name in names and e.device_type == cpu}
    device = [e for e in events if e.device_type != cpu and e.name not in names]
    copies = [e for e in device if e.name.startswith(("Memcpy", "Memset"))]
    print(
        json.dumps(
            {
                "range_kernel_us": {k: round(kernel_us(e), 1) for k, e in ranges.items()},
                "all_kernels_us": round(sum(e.device_time_total for e in device), 1)
                - round(sum(e.device_time_total for e in copies), 1),
                "kernels": len(device) - len(copies),
                "copies_us": round(sum(e.device_time_total for e in copies), 1),
            },
            indent=1,
        )
    )


def kernel_us(event: object) -> float:
    """Kernel time (us) torch attributes to a CPU event and everything below it, copies and
    sets apart."""
    own = sum(
        k.duration
        for k in event.kernels  # type: ignore[attr-defined]
        if not k.name.startswith(("Memcpy", "Memset"))
    )
    return own + sum(kernel_us(child) for child in event.cpu_children)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
