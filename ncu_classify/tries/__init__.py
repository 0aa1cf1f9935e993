"""Cards + shapes file -> measured next moves (`ncu-classify try`).

catalog   the alternatives a card's facts allow (layout, dtype, backend, padding, Inductor)
plan      the top moves matched to their shapes; the tries shapes file and plan.json
plan_models  what plan.json holds: moves, alternatives, cards passed over, a program move
chain_moves  the recording's largest chains as fusion moves (eager against compiled)
fold_moves  its pads folded into the convs they feed (pad+conv against conv padding)
fold_chains  the two chains a pad fold replays, of the same inputs
numerics  an alternative's output sample against the original's, with a named tolerance
program   a program-wide move: every shape of a stage changed together (bf16, channels-last)
results   the tries capture's cards against the plan: times, savings, intervals, winners
overlap   a stage's total with each op's saving counted once (per-op moves inside chains)
program_results  a program-wide move's saving per stage, with its interval
run       plan -> capture -> classify -> tries.json, in one folder
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = ["TryResults", "plan_folder", "run_tries"]
__getattr__ = lazy_face(
    __name__,
    {"TryResults": "results", "plan_folder": "run", "run_tries": "run"},
)
