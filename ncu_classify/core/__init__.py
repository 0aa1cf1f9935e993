"""Shared vocabulary of every step. Imports nothing of ours outside core/.

errors    the one exception tree (only the CLI maps it to exit codes)
textio    bounded reading of user text and JSON files, one-line errors
yamlio    YAML with line numbers, validated into file:line:col errors
jsonpos   where a value sits in a JSON text (file:line:col)
atomic    atomic writes (temporary sibling, fsync, rename)
text      printable and Markdown-safe text from users' files
paths     paths named by what they are, not where the command ran
clock     the wall clock of stamped outputs (SOURCE_DATE_EPOCH)
ordering  the order stages are shown in
metrics   the metric catalog: card keys, ncu names, units
units     ncu's units converted to the card's
kernel_names a kernel's base name, as torch.profiler and ncu both give it
counters  the roofline counters
stalls    the drill-down counters (warp states and deciders)
measured  figures not measured: NaN read as missing, never 0
stats     figures measured several times: mean, interval, RSD
noise     run-to-run noise of metrics and durations
facts     typed machine facts that keep what they do not name
trusted   models built from trusted values, cheaply
cache     validated input files kept by content hash
collector the cycle collector paused while many small objects are built
lazy      lazy package faces
"""

from __future__ import annotations

from .lazy import lazy_face

__all__ = [
    "CATALOG",
    "CardsError",
    "Facts",
    "NcuClassifyError",
    "utc_now",
]
__getattr__ = lazy_face(
    __name__,
    {
        "CATALOG": "metrics",
        "CardsError": "errors",
        "Facts": "facts",
        "NcuClassifyError": "errors",
        "utc_now": "clock",
    },
)
