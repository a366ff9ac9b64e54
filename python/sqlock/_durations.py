"""Durations as the public API takes them (seconds as int/float, or timedelta) turned into the
C API's milliseconds."""
from __future__ import annotations

from datetime import timedelta
from typing import Optional, Union

from .errors import InvalidArgument

Duration = Union[int, float, timedelta]

#: The C API's "wait until granted".
WAIT_FOREVER = -1


def to_ms(value: Duration, what: str) -> int:
    """``value`` in whole milliseconds (rounded up, so a positive duration stays positive).
    Raises InvalidArgument for a negative value or a type that is not a duration."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise InvalidArgument(f"{what} must be seconds (int or float) or a timedelta, "
                              f"not {type(value).__name__}", -1)
    if seconds < 0 or seconds != seconds:
        raise InvalidArgument(f"{what} must not be negative ({value!r})", -1)
    ms = seconds * 1000.0
    whole = int(ms)
    return whole + 1 if ms > whole else whole


def optional_ms(value: Optional[Duration], what: str) -> int:
    """``value`` in milliseconds, or 0 (the C API's "the default") for None."""
    return 0 if value is None else max(1, to_ms(value, what))


def wait_ms(timeout: Optional[Duration], blocking: bool) -> int:
    """The C API's timeout_ms of ``acquire(timeout, blocking)``, as threading.Lock takes
    them: blocking=False is one attempt (and takes no timeout); timeout None (or -1) waits
    until granted."""
    if not blocking:
        if timeout is not None and timeout != -1:
            raise InvalidArgument("a non-blocking acquire takes no timeout", -1)
        return 0
    if timeout is None or (isinstance(timeout, (int, float)) and timeout == -1):
        return WAIT_FOREVER
    return to_ms(timeout, "timeout")
