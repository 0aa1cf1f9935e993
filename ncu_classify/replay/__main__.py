"""`python -m ncu_classify.replay BATCH.json STATUS.jsonl`: the command line capture hands ncu."""

from __future__ import annotations

import sys
from pathlib import Path

from .target import replay_batch

if __name__ == "__main__":
    sys.exit(replay_batch(Path(sys.argv[1]), Path(sys.argv[2])))
