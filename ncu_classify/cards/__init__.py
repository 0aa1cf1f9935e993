"""The cards file users keep (the card models, what a file adds up to, the file on disk, the
legacy format read as it comes). Judges nothing: verdicts/ does.

  model       the card and kernel-card models (the JSON users keep)
  figures     roofline, card roofline (MFU) and margin figures beside the metrics
  hot_units   the busiest units of ncu's SM and memory breakdowns, named
  machine     what the cards were measured on: GPU, capture, software
  coverage    how much of the recorded program the cards cover, per stage
  fidelity    replayed time per call against the program's own time
  kernel_names the program's kernels against the replay's, by name (fidelity's cause)
  headroom    time left on the table: kernel roofs, speed of light, next moves
  drill       the drill-down section of a kernel and a card's settled verdict
  repeats     repeated measurements on a card (capture --repeat)
  selection   which cards a drill-down captures again
  rollup      dominant kernel, classes counted, time per stage by calls
  files       cards files on disk: read, one card per line, write
  legacy      the legacy in-house format -> our CardFile
  legacy_fit  the legacy fields fitted to the card models, losing nothing
  gpus        the table of GPUs a projection uses (data/gpus.yaml), each figure with its source
  projected   the projection block of a projected file and of each kernel
  projection  a cards file projected onto another GPU by each kernel's binding roof
  projection_figures  the table ratios; a kernel's roofline and a card's MFU on the target
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = [
    "Card",
    "CardFile",
    "KernelCard",
    "card_file_text",
    "load_card_file",
    "write_card_file",
]
__getattr__ = lazy_face(
    __name__,
    {
        "Card": "model",
        "CardFile": "model",
        "KernelCard": "model",
        "card_file_text": "files",
        "load_card_file": "files",
        "write_card_file": "files",
    },
)
