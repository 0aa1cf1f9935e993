"""A small program whose typed ops get what a video model hands them (CPU torch), recorded as a
shapes file: a 1x1x1 conv3d fed a frames-first `permute` view, a slice with a storage offset
and a contiguous tensor; SDPA with a boolean padding mask (broadcast over heads and queries)
and a scale, and without; a linear fed a transposed view. The record tests read its layouts
back, the replay tests rebuild them."""

from __future__ import annotations

from pathlib import Path

# The group ids of its plain conv and plain attention (as before layouts existed).
CONV = "net:conv3d:in1x8x4x6x6_w16x8x1x1x1_s1x1x1_p0x0x0:fp32:tf32:bias"
ATTENTION = "net:sdpa:self_b2_h2_d16_q12_k12:fp32"


def record_net(path: Path) -> Path:
    """The program recorded on the CPU (torch needed) and written as a shapes file at `path`."""
    import torch
    import torch.nn.functional as F

    from ncu_classify.record import Recorder
    from ncu_classify.record.document import shapes_yaml, validated_document

    class Net(torch.nn.Module):
        """A frames-first video block: a 1x1x1 projection over channels, masked attention."""

        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Conv3d(8, 16, 1)
            self.out = torch.nn.Linear(16, 16)

        def forward(self, frames, clip, q, k, v, pad):  # type: ignore[no-untyped-def]
            a = self.proj(frames.permute(0, 2, 1, 3, 4))  # (B, F, C, H, W): channels second
            b = self.proj(clip[:, :, 1:])  # frames 1.. of a clip: an offset, gaps
            c = self.proj(clip[:, :, 1:].contiguous())
            mask = pad[:, None, None, :].expand(-1, 1, q.shape[2], -1)  # padded text keys
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.5)
            plain = F.scaled_dot_product_attention(q, k, v)
            return a, b, c, self.out(att.transpose(1, 2)), plain

    net = Net()
    frames, clip = torch.randn(1, 4, 8, 6, 6), torch.randn(1, 8, 5, 6, 6)
    q, k, v = (torch.randn(2, 2, 12, 16) for _ in range(3))
    pad = torch.arange(12)[None, :] < torch.tensor([[9], [5]])  # 9 and 5 real tokens
    with Recorder() as recorder:
        net(frames, clip, q, k, v, pad)
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    return path
