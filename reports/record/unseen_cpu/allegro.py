"""Tiny Allegro: one DiT step as its pipeline runs it (3-D rotary by position lookup, the
prompt's padding masked additively), classifier-free guidance."""

import torch
from diffusers import AllegroTransformer3DModel
from diffusers.models.embeddings import get_3d_rotary_pos_embed_allegro

torch.manual_seed(0)
transformer = AllegroTransformer3DModel(
    num_attention_heads=2,
    attention_head_dim=12,
    in_channels=4,
    out_channels=4,
    num_layers=2,
    cross_attention_dim=24,
    sample_width=8,
    sample_height=8,
    sample_frames=8,
    caption_channels=24,
).eval()

frames, grid = 2, 4
latents = torch.randn(1, 4, frames, 8, 8)
text = torch.randn(2, 16, 24)
text_mask = torch.zeros(2, 16, dtype=torch.int64)
text_mask[0, :1] = 1
text_mask[1, :9] = 1
freqs_t, freqs_h, freqs_w, grid_t, grid_h, grid_w = get_3d_rotary_pos_embed_allegro(
    embed_dim=12,
    crops_coords=((0, 0), (grid, grid)),
    grid_size=(grid, grid),
    temporal_size=frames,
    interpolation_scale=(2.2, 2.0, 2.0),
)
pos = torch.cartesian_prod(grid_t.long(), grid_h.long(), grid_w.long())
pos = pos.reshape(-1, 3).transpose(0, 1).reshape(3, 1, -1).contiguous()
rotary = ((freqs_t, freqs_h, freqs_w), tuple(pos))
with torch.no_grad():
    both = torch.cat([latents] * 2)
    out = transformer(
        both,
        text,
        torch.tensor([500, 500]),
        encoder_attention_mask=text_mask,
        image_rotary_emb=rotary,
        return_dict=False,
    )[0]
    uncond, cond = out.chunk(2)
    latents = latents - 0.1 * (uncond + 7.5 * (cond - uncond))
print(latents.shape)
