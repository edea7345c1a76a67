"""Remembering values a validator found valid, so a repeat costs one look-up, not a walk.

Every pod a ReplicaSet creates carries the same spec, labels and ownerReference; validating
them again finds nothing again (2,000 pods -> one walk, 1,999 look-ups). Only *valid* values
are remembered: anything with an error is validated in full every time, so each Status
(code, reason, message, causes) is exactly what the full walk gives.

By default the key is the JSON encoding of the validator's arguments: two argument lists with
the same encoding are the same JSON values, and the validators are pure functions of JSON
values. Arguments orjson cannot encode (not JSON at all) are validated without memo. Checks of
one string (the name and label checks) use the string itself (`key=str_key`).
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Hashable, TypeVar

import orjson

F = TypeVar("F", bound=Callable[..., list[Any]])

# Per validator. The set is emptied when full: a cluster has a handful of pod templates, and a
# flood of distinct values only costs the walk they would cost anyway.
MAX_ENTRIES = 1024
_ENCODE_ERRORS = (TypeError, orjson.JSONEncodeError)


def json_key(*args: Any, **kwargs: Any) -> Hashable | None:
    """The arguments' JSON encoding; None (no memo) when they are not JSON."""
    try:
        return orjson.dumps((args, kwargs) if kwargs else args)
    except _ENCODE_ERRORS:
        return None


# The ServiceAccount admission plugin names each pod's token volume kube-api-access-<5 random
# characters> (names.SimpleNameGenerator's alphabet), so no two pods of a ReplicaSet would encode
# alike and each would be validated in full (+90 us per pod create). Every name
# kube-api-access-<5 of [a-z0-9]> is a valid DNS label (and subdomain, label value, ...) of the
# same length, and a pod spec's validity depends on them only through equality (duplicate
# volume names, mounts naming a volume); pod_spec_key renames the volumes so named, in volume
# order, to placeholders, which keeps equal names equal and distinct ones distinct.
_GENERATED_VOLUME_NAME = re.compile("kube-api-access-[a-z0-9]{5}").fullmatch
# As long as a quoted name ("kube-api-access-" and 5, in quotes: 23 bytes), so bytes.replace
# rewrites a copy in place (one search of the key) instead of counting first and then building.
_PLACEHOLDERS = tuple(b'"\0%020d"' % n for n in range(4))


def pod_spec_key(spec: Any, path: str, is_pod: bool, spec_json: bytes | None = None) -> Hashable | None:
    """validate_pod_spec's key: the spec's JSON with the generated token volume names renamed
    (see above), and the path and is_pod. Every occurrence of such a volume's name as a whole
    JSON string ("name" in quotes: nothing else in orjson's output can hold those bytes, a quote
    inside a string being escaped) becomes a NUL byte and its number, in quotes. A raw NUL never
    appears in orjson's output (it escapes control characters), so no spec, whatever its names,
    encodes to a placeholder (the placeholder used before, "kube-api-access-#0", was a valid
    JSON string: a pod whose volume was named so literally passed validation after a generated one).

    The names come from spec["volumes"], not from a search of the encoding: each pod create
    of a ReplicaSet comes here, and a scan of its ~1.3 KB of JSON costs ~2k instructions, of
    which a search for the prefix took four (~20k per create; one replace takes two).

    `spec_json`: orjson.dumps(spec), when the caller has it (a pod create: the registry store
    encodes the spec once, for this key and for the stored bytes)."""
    if spec_json is not None:
        k = spec_json
    else:
        try:
            k = orjson.dumps(spec)
        except _ENCODE_ERRORS:
            return None
    volumes = spec.get("volumes") if type(spec) is dict else None
    if volumes and type(volumes) is list:
        n = 0
        for v in volumes:
            name = v.get("name") if type(v) is dict else None
            if type(name) is str and _GENERATED_VOLUME_NAME(name):
                k = k.replace(b'"%s"' % name.encode(), _PLACEHOLDERS[n] if n < len(_PLACEHOLDERS) else b'"\0%020d"' % n)
                n += 1
    return (k, path, is_pod) if type(path) is str and type(is_pod) is bool else None


def str_key(value: Any) -> Hashable | None:
    """A plain str is its own key; anything else goes the full way."""
    return value if type(value) is str else None


def remember_valid(fn: F | None = None, *, key: Callable[..., Hashable | None] = json_key,
                   max_entries: int | None = None) -> Any:
    """Wrap a pure validator `fn(*args, **kwargs) -> list[errors]` so that arguments it found
    valid before return [] at once (`@remember_valid` or `@remember_valid(key=..., max_entries=...)`).
    `wrapper.seen` holds the keys remembered."""
    def decorate(fn: F) -> F:
        limit = MAX_ENTRIES if max_entries is None else max_entries
        seen: set[Hashable] = set()

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> list[Any]:
            k = key(*args, **kwargs)
            if k is not None and k in seen:
                return []
            errs = fn(*args, **kwargs)
            if not errs and k is not None:
                if len(seen) >= limit:
                    seen.clear()
                seen.add(k)
            return errs

        wrapper.seen = seen  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]
    return decorate if fn is None else decorate(fn)
