"""The target that runs under ncu: `python -m ncu_classify.replay BATCH.json STATUS.jsonl`
replays a batch of shapes on the GPU, each in its own NVTX range. With record/ the only
package that imports torch; capture/ imports only its protocol (torch-free).

- protocol: the batch file and status lines shared with capture (no torch)
- inputs: seeded input draws (`hashed_normal_v1`) and recorded inputs (torch)
- aten: a recorded device op rebuilt with its layouts and called by overload (torch)
- chain: a recorded chain of device ops as one function, eager or compiled (torch)
- layouts: a typed shape's inputs in the program's layout, attention's mask (torch)
- target: the replay loop, the op builders and the machine facts (torch)
- outputs: a sample of each output, for `try`'s numerics (torch)
- __main__: the command line ncu runs
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = ["BatchFile", "read_batch", "replay_batch", "serve_batch", "write_batch"]
__getattr__ = lazy_face(
    __name__,
    {
        "BatchFile": "protocol",
        "read_batch": "protocol",
        "replay_batch": "target",
        "serve_batch": "protocol",
        "write_batch": "protocol",
    },
)
