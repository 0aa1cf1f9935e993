"""Tiny Cosmos (text-to-world): one DiT step, the prompt's padding masked (no padding-mask
channel: that needs torchvision)."""

import torch
from diffusers import CosmosTransformer3DModel

torch.manual_seed(0)
transformer = CosmosTransformer3DModel(
    in_channels=4,
    out_channels=4,
    num_attention_heads=2,
    attention_head_dim=12,
    num_layers=2,
    mlp_ratio=2,
    text_embed_dim=16,
    adaln_lora_dim=4,
    max_size=(4, 32, 32),
    patch_size=(1, 2, 2),
    rope_scale=(2.0, 1.0, 1.0),
    concat_padding_mask=False,
    extra_pos_embed_type="learnable",
).eval()

latents = torch.randn(1, 4, 2, 8, 8)
text = torch.randn(1, 12, 16)
text_mask = torch.zeros(1, 12, dtype=torch.bool)
text_mask[:, :7] = True
with torch.no_grad():
    noise = transformer(
        latents, torch.tensor([0.5]), text, attention_mask=text_mask, fps=30, return_dict=False
    )[0]
    latents = latents - 0.1 * noise
print(latents.shape)
