"""The target the stand-in ncu runs: the real batch/status protocol loop with a fake replay.

FAKE_NCU_MODE picks how it behaves (see the stand-in ncu); it never touches a GPU.
"""

import os
import signal
import sys
import time
from pathlib import Path

from ncu_classify.replay.protocol import serve_batch

MODE = os.environ.get("FAKE_NCU_MODE", "ok")
done = [0]


def replay(entry, batch):
    if MODE.startswith("crash_after_") and done[0] == int(MODE.rsplit("_", 1)[1]):
        os.abort()  # SIGABRT: ncu reports exit code 134
    if MODE == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stuck in a kernel: no Python runs
        time.sleep(3600)
    time.sleep(float(os.environ.get("FAKE_SHAPE_SECONDS", "0.05")))
    done[0] += 1
    return {"input_sha256": "0" * 64}


if __name__ == "__main__":
    sys.exit(
        serve_batch(
            Path(sys.argv[1]),
            Path(sys.argv[2]),
            replay,
            lambda: {"gpu_name": "fake", "torch": "none"},
            repr,
        )
    )
