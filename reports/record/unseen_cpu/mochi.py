"""Tiny Mochi: one DiT step with classifier-free guidance (the prompt and the empty negative
prompt, padded to 16 tokens, masked) and a VAE decode."""

import torch
from diffusers import AutoencoderKLMochi, MochiTransformer3DModel

torch.manual_seed(0)
transformer = MochiTransformer3DModel(
    patch_size=2,
    num_attention_heads=2,
    attention_head_dim=16,
    num_layers=2,
    pooled_projection_dim=16,
    in_channels=4,
    out_channels=None,
    qk_norm="rms_norm",
    text_embed_dim=24,
    time_embed_dim=4,
    activation_fn="swiglu",
    max_sequence_length=16,
).eval()
vae = AutoencoderKLMochi(
    in_channels=15,
    out_channels=3,
    latent_channels=4,
    encoder_block_out_channels=(32, 32, 32, 32),
    decoder_block_out_channels=(32, 32, 32, 32),
    layers_per_block=(1, 1, 1, 1, 1),
    act_fn="silu",
    scaling_factor=1,
).eval()

latents = torch.randn(1, 4, 2, 8, 8)
text = torch.randn(2, 16, 24)  # negative prompt, prompt
text_mask = torch.zeros(2, 16, dtype=torch.bool)
text_mask[0, :1] = True  # the empty prompt: its end token
text_mask[1, :9] = True
with torch.no_grad():
    both = torch.cat([latents] * 2)
    uncond, cond = transformer(both, text, torch.tensor([500, 500]), text_mask, return_dict=False)[
        0
    ].chunk(2)
    latents = latents - 0.1 * (uncond + 4.5 * (cond - uncond))
    video = vae.decode(latents).sample
    frames = ((video.clamp(-1, 1) + 1) * 127.5).to(torch.uint8)
print(frames.shape)
