"""A program the project did not write, compiled: diffusers' CogVideoX VAE (a tiny config,
random weights) decodes a 7-frame latent twice with its decoder under torch.compile, as a
user compiles it (`vae.decoder.compile()`); its frame batches and conv caches make dynamo
recompile. Run under `reports/record/compiled_code.py` to compare the replayed graphs'
kernels with the program's (CPU or GPU: `--device`)."""

import argparse

import diffusers
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--frames", type=int, default=7, help="latent frames")
    args = parser.parse_args()
    torch.manual_seed(0)
    vae = diffusers.AutoencoderKLCogVideoX(
        block_out_channels=(8, 8, 8, 8), latent_channels=4, layers_per_block=1,
        norm_num_groups=4, sample_height=16, sample_width=16,
    ).eval().to(args.device)  # fmt: skip
    vae.decoder.compile()
    latent = torch.randn(1, 4, args.frames, 4, 4, device=args.device)
    with torch.no_grad():
        for _ in range(2):
            video = vae.decode(latent, return_dict=False)[0]
    print("video", tuple(video.shape))


if __name__ == "__main__":
    main()
