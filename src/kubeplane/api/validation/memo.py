"""Remembering values a validator found valid, so a repeat costs one encoding, not a walk.

Every pod a ReplicaSet creates carries the same spec, labels and ownerReference; validating
them again finds nothing again (2,000 pods -> one walk, 1,999 look-ups). Only *valid* values
are remembered: anything with an error is validated in full every time, so each Status
(code, reason, message, causes) is exactly what the full walk gives.

The key is the JSON encoding of the validator's arguments: two argument lists with the same
encoding are the same JSON values, and the validators are pure functions of JSON values.
Arguments orjson cannot encode (not JSON at all) are validated without memo.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

import orjson

F = TypeVar("F", bound=Callable[..., list[Any]])

# Per validator. The set is emptied when full: a cluster has a handful of pod templates, and a
# flood of distinct values only costs the walk they would cost anyway.
MAX_ENTRIES = 1024
_ENCODE_ERRORS = (TypeError, orjson.JSONEncodeError)


def remember_valid(fn: F) -> F:
    """Wrap a pure validator `fn(*args, **kwargs) -> list[FieldError]` so that arguments it found valid
    before return [] at once. `wrapper.clear()` forgets everything (for tests)."""
    seen: set[bytes] = set()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> list[Any]:
        try:
            key = orjson.dumps((args, kwargs) if kwargs else args)
        except _ENCODE_ERRORS:
            return fn(*args, **kwargs)
        if key in seen:
            return []
        errs = fn(*args, **kwargs)
        if not errs:
            if len(seen) >= MAX_ENTRIES:
                seen.clear()
            seen.add(key)
        return errs

    wrapper.clear = seen.clear  # type: ignore[attr-defined]
    wrapper.seen = seen         # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
