"""Tiny CogVideoX: one DiT step (joint text+video attention, rotary) and a VAE decode."""

import torch
from diffusers import AutoencoderKLCogVideoX, CogVideoXTransformer3DModel
from diffusers.models.embeddings import get_3d_rotary_pos_embed

torch.manual_seed(0)
transformer = CogVideoXTransformer3DModel(
    num_attention_heads=2,
    attention_head_dim=16,
    in_channels=4,
    out_channels=4,
    time_embed_dim=16,
    text_embed_dim=24,
    num_layers=2,
    sample_width=8,
    sample_height=8,
    sample_frames=9,
    patch_size=2,
    temporal_compression_ratio=4,
    max_text_seq_length=12,
    use_rotary_positional_embeddings=True,
).eval()
vae = AutoencoderKLCogVideoX(
    in_channels=3,
    out_channels=3,
    down_block_types=("CogVideoXDownBlock3D",) * 4,
    up_block_types=("CogVideoXUpBlock3D",) * 4,
    block_out_channels=(8, 8, 8, 8),
    latent_channels=4,
    layers_per_block=1,
    norm_num_groups=2,
    temporal_compression_ratio=4,
).eval()

latents = torch.randn(1, 3, 4, 8, 8)  # (B, F, C, H, W)
text = torch.randn(1, 12, 24)
cos, sin = get_3d_rotary_pos_embed(16, ((0, 0), (4, 4)), (4, 4), 3)
with torch.no_grad():
    noise = transformer(
        latents, text, torch.tensor([500]), image_rotary_emb=(cos, sin), return_dict=False
    )[0]
    latents = latents - 0.1 * noise
    video = vae.decode(latents.permute(0, 2, 1, 3, 4) / vae.config.scaling_factor).sample
    frames = ((video.clamp(-1, 1) + 1) * 127.5).to(torch.uint8)
print(frames.shape)
