"""The wall clock of the outputs that carry one (`generated_at`, `created_at`, `reclassified_at`).

One function, so that every stamp is made the same way and tests can make the clock tick: a
test that compares two outputs carrying a stamp then fails every time, not once in a while.
`SOURCE_DATE_EPOCH` (the reproducible-builds convention, seconds since 1970) pins the stamp; a
value that is not a whole number of seconds in the range a stamp can hold is a usage error (the
convention: a malformed value must fail the build, not fall back to the wall clock).
"""

from __future__ import annotations

import datetime as dt
import os

from .errors import UsageError

EPOCH_VARIABLE = "SOURCE_DATE_EPOCH"
LATEST_EPOCH = 253402300799  # 9999-12-31T23:59:59Z, the last second a stamp can hold


def utc_now() -> str:
    """The current UTC time as ISO 8601 to the second, or SOURCE_DATE_EPOCH's when it is set."""
    pinned = pinned_epoch()
    if pinned is not None:
        return dt.datetime.fromtimestamp(pinned, dt.timezone.utc).isoformat()
    return _now().isoformat(timespec="seconds")


def pinned_epoch() -> int | None:
    """SOURCE_DATE_EPOCH in seconds; None where it is unset or empty. A UsageError naming it
    and its value where it is not a whole number from 0 to LATEST_EPOCH (`abc`, `-5`, `1.5`,
    ` 5`, a number of 17 digits): digits alone, as the convention defines them; a blank value
    is an empty one."""
    given = os.environ.get(EPOCH_VARIABLE)
    if given is None or not given.strip():
        return None
    text = given  # not stripped: ` 5` is malformed
    if text.isascii() and text.isdigit() and len(text) <= 12 and int(text) <= LATEST_EPOCH:
        return int(text)
    shown = given if len(given) <= 40 else given[:40] + "..."
    raise UsageError(
        f"{EPOCH_VARIABLE}={shown!r}: not a whole number of seconds since 1970 from 0 to"
        f" {LATEST_EPOCH} (9999-12-31); set it to one, or unset it for the current time"
    )


def _now() -> dt.datetime:
    """The current UTC time (the one place that reads the wall clock)."""
    return dt.datetime.now(dt.timezone.utc)
