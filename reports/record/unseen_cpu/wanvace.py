"""Tiny Wan VACE: one DiT step with a control video through the VACE blocks."""

import torch
from diffusers import WanVACETransformer3DModel

torch.manual_seed(0)
transformer = WanVACETransformer3DModel(
    patch_size=(1, 2, 2),
    num_attention_heads=2,
    attention_head_dim=12,
    in_channels=16,
    out_channels=16,
    text_dim=32,
    freq_dim=256,
    ffn_dim=32,
    num_layers=3,
    cross_attn_norm=True,
    qk_norm="rms_norm_across_heads",
    rope_max_seq_len=32,
    vace_layers=[0, 2],
    vace_in_channels=48,
).eval()

latents = torch.randn(1, 16, 2, 8, 8)
control = torch.randn(1, 48, 2, 8, 8)
text = torch.randn(1, 12, 32)
with torch.no_grad():
    noise = transformer(
        latents,
        torch.tensor([500]),
        text,
        control_hidden_states=control,
        control_hidden_states_scale=torch.ones(2),
        return_dict=False,
    )[0]
    latents = latents - 0.1 * noise
print(latents.shape)
