"""`python -m ncu_classify.replay BATCH.json STATUS.jsonl`: the command line capture hands ncu."""

from __future__ import annotations

import sys
from pathlib import Path

USAGE = "usage: python -m ncu_classify.replay BATCH.json STATUS.jsonl (capture runs this under ncu)"

if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(USAGE)  # one line and status 1, not an IndexError from a hand-typed run
    from .target import replay_batch

    sys.exit(replay_batch(Path(sys.argv[1]), Path(sys.argv[2])))
