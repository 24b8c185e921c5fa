"""Bounds on every number read from a file an agent or its model could have written.

Such a file may hold anything JSON can: integers of any size (`10**29`), floats that overflow
(`1e308`, which becomes `inf` once scaled), NaN, negative clock readings. Read through these
types, a number that no honest writer produces fails validation as what it is (an unreadable
record, counted as such) instead of overflowing an int64 array half-way through a table or a
float conversion inside a validator. The bounds leave room for every figure derived from the
values: a difference of two clock readings, a sum over a million requests, stay in int64.

A new field of an agent-written contract takes one of these types; `lenient` turns one into
"None when out of bounds" for fields read beside others that must not be lost with it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, ValidationError, WrapValidator

# A clock reading in integer nanoseconds (perf_counter_ns or time_ns): 2**62 ns is 146 years,
# and the difference of two readings stays inside int64.
NS_MAX = 1 << 62
# A count (tokens, characters, retries, attempts, steps): 2**40 each, so a sum over 2**23
# records stays inside int64.
COUNT_MAX = 1 << 40
# A duration in milliseconds: 10**12 ms is 31 years; in ns it stays below NS_MAX.
MS_MAX = 1e12
# Entries of one list in one record (a request's network reads).
LIST_MAX = 1_000_000
# An HTTP status code.
STATUS_MAX = 999

Nanos = Annotated[int, Field(ge=0, le=NS_MAX)]
Count = Annotated[int, Field(ge=0, le=COUNT_MAX)]
Millis = Annotated[float, Field(ge=0, le=MS_MAX, allow_inf_nan=False)]
HttpStatus = Annotated[int, Field(ge=0, le=STATUS_MAX)]


def _none_if_invalid(value: Any, handler: Any) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return None


def lenient(bounded: Any) -> Any:
    """`bounded | None`, None for a value outside the bounds (or of the wrong type)."""
    return Annotated[bounded | None, WrapValidator(_none_if_invalid)]


def finite_number(value: Any, limit: float = float(NS_MAX)) -> float | None:
    """`value` as a float when it is a number (not a bool) of magnitude at most `limit`;
    None otherwise. For free-form fields (a server's timing block) read number by number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and abs(value) > limit:
        return None  # float() of a huge int raises OverflowError
    number = float(value)
    return number if abs(number) <= limit else None  # NaN fails the comparison too
