"""What sqlock tells a holder about its grant: the lost and at-risk events.

sqlock's background threads (the lease keeper's renewal and watchdog threads) notice them. No
Python code runs there: the C layer copies each event into a queue of the lock object, and
Python code reads it when it asks (:meth:`Mutex.events`, :attr:`Mutex.lost`, ...). So a
callback never runs without the GIL, never during interpreter shutdown, and never in a
thread Python does not know.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, List, Tuple, Union

__all__ = ["LossReason", "LostEvent", "AtRiskEvent", "Event"]


class LossReason(enum.IntEnum):
    """Why a held grant stopped being certainly ours (the C API's ``sqlock_loss_reason``)."""

    NONE = 0  #: not lost
    LOST = 1  #: gone, or its lease ran out: another owner may hold it
    UNKNOWN = 2  #: the database could not be reached before the lease's end


@dataclass(frozen=True)
class LostEvent:
    """A held grant was lost (once per grant)."""

    name: str  #: the lock's name
    token: int  #: the fencing token of the grant that was lost
    reason: LossReason
    message: str  #: what happened, for logs


@dataclass(frozen=True)
class AtRiskEvent:
    """Renewals are failing (``at_risk``) or got through again (not ``at_risk``)."""

    name: str
    token: int
    at_risk: bool
    #: seconds left, when the event was made, until the lease's local end (may be negative)
    lease_remaining: float
    message: str  #: the last renewal's error, or ""


Event = Union[LostEvent, AtRiskEvent]


def from_c(raw: List[Tuple[Any, ...]]) -> List[Event]:
    """The events the C layer recorded (its tuples), as objects, oldest first."""
    events: List[Event] = []
    for item in raw:
        if item[0] == "lost":
            _, name, token, reason, message = item
            events.append(LostEvent(name, token, LossReason(reason), message))
        else:
            _, name, token, at_risk, remaining_ms, message = item
            events.append(AtRiskEvent(name, token, bool(at_risk), remaining_ms / 1000.0,
                                      message))
    return events
