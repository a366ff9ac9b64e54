"""How a lock is kept in the database (docs: guides/strategies.md)."""
from __future__ import annotations

import enum
from typing import Union

from .errors import InvalidArgument

__all__ = ["Strategy"]


class Strategy(enum.IntEnum):
    """The C API's ``sqlock_strategy``. The lock classes also take the names as strings."""

    UNIQUE_KEY = 0  #: a lease row under a primary key (the default)
    SELECT_FOR_UPDATE = 1  #: a row lock of an open transaction
    OPTIMISTIC_VERSION = 2  #: compare-and-set on a version column


def strategy_value(strategy: Union[Strategy, str, int]) -> int:
    """The C value of ``strategy`` (a Strategy, its name in any case, or its number)."""
    if isinstance(strategy, str):
        try:
            return Strategy[strategy.upper()].value
        except KeyError:
            raise InvalidArgument(f"unknown strategy {strategy!r} (unique_key, "
                                  "select_for_update, optimistic_version)", -1) from None
    try:
        return Strategy(strategy).value
    except ValueError:
        raise InvalidArgument(f"unknown strategy {strategy!r}", -1) from None
