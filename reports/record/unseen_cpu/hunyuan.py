"""Tiny HunyuanVideo: one DiT step (dual-stream, text padded as the text encoder pads it,
masked) and a VAE decode (its mid-block attention is frame-causal)."""

import torch
from diffusers import AutoencoderKLHunyuanVideo, HunyuanVideoTransformer3DModel

torch.manual_seed(0)
transformer = HunyuanVideoTransformer3DModel(
    in_channels=4,
    out_channels=4,
    num_attention_heads=2,
    attention_head_dim=16,
    num_layers=2,
    num_single_layers=2,
    num_refiner_layers=1,
    patch_size=2,
    patch_size_t=1,
    guidance_embeds=True,
    text_embed_dim=24,
    pooled_projection_dim=8,
    rope_axes_dim=(4, 6, 6),
).eval()
vae = AutoencoderKLHunyuanVideo(
    in_channels=3,
    out_channels=3,
    latent_channels=4,
    block_out_channels=(8, 8, 8, 8),
    layers_per_block=1,
    norm_num_groups=4,
).eval()

latents = torch.randn(1, 4, 3, 8, 8)  # (B, C, F, H, W)
text = torch.randn(1, 16, 24)  # the prompt's 9 tokens, padded to 16
text_mask = torch.zeros(1, 16, dtype=torch.int64)
text_mask[:, :9] = 1
pooled = torch.randn(1, 8)
with torch.no_grad():
    noise = transformer(
        latents,
        torch.tensor([500]),
        text,
        text_mask,
        pooled,
        guidance=torch.tensor([6000.0]),
        return_dict=False,
    )[0]
    latents = latents - 0.1 * noise
    video = vae.decode(latents / vae.config.scaling_factor).sample
    frames = ((video.clamp(-1, 1) + 1) * 127.5).to(torch.uint8)
print(frames.shape)
