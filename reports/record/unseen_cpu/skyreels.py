"""Tiny SkyReels-V2 (diffusion forcing): one DiT step, a noise level per frame, frames attend
block-causally (2 frames a block)."""

import torch
from diffusers import SkyReelsV2Transformer3DModel

torch.manual_seed(0)
transformer = SkyReelsV2Transformer3DModel(
    patch_size=(1, 2, 2),
    num_attention_heads=2,
    attention_head_dim=12,
    in_channels=16,
    out_channels=16,
    text_dim=32,
    freq_dim=256,
    ffn_dim=32,
    num_layers=2,
    cross_attn_norm=True,
    qk_norm="rms_norm_across_heads",
    rope_max_seq_len=32,
    num_frame_per_block=2,
).eval()

latents = torch.randn(1, 16, 4, 8, 8)
text = torch.randn(1, 12, 32)
timesteps = torch.tensor([[0, 0, 500, 500]])
with torch.no_grad():
    noise = transformer(latents, timesteps, text, enable_diffusion_forcing=True, return_dict=False)[
        0
    ]
    latents = latents - 0.1 * noise
print(latents.shape)
