"""The wall clock of the outputs that carry one (`generated_at`, `created_at`, `reclassified_at`).

One function, so that every stamp is made the same way and tests can make the clock tick: a
test that compares two outputs carrying a stamp then fails every time, not once in a while.
`SOURCE_DATE_EPOCH` (the reproducible-builds convention, seconds since 1970) pins the stamp.
"""

from __future__ import annotations

import datetime as dt
import os


def utc_now() -> str:
    """The current UTC time as ISO 8601 to the second, or SOURCE_DATE_EPOCH's when it is set."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if pinned.isdigit():
        return dt.datetime.fromtimestamp(int(pinned), dt.timezone.utc).isoformat()
    return _now().isoformat(timespec="seconds")


def _now() -> dt.datetime:
    """The current UTC time (the one place that reads the wall clock)."""
    return dt.datetime.now(dt.timezone.utc)
