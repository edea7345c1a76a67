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
T = TypeVar("T")

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
_PLACEHOLDERS = tuple(b'"\0%d"' % n for n in range(4))


def pod_spec_key(*args: Any, **kwargs: Any) -> Hashable | None:
    """json_key, with the generated token volume names renamed (see above): every occurrence of
    such a volume's name as a whole JSON string ("name" in quotes: nothing else in orjson's
    output can hold those bytes, a quote inside a string being escaped) becomes a NUL byte
    and its number, in quotes. A raw NUL never appears in orjson's output (it escapes control
    characters), so no spec, whatever its names, encodes to a placeholder (the placeholder
    used before, "kube-api-access-#0", was a valid JSON string: a pod whose volume was named
    so literally passed validation after a generated one).

    The names come from spec["volumes"], not from a search of the encoding: each pod create
    of a ReplicaSet comes here, and a scan of its ~1.3 KB of JSON costs ~2k instructions, of
    which a search for the prefix took four (~20k per create; one replace takes two).

    The values admission shares among pods (shared(): the token volume's projected source,
    the default tolerations) are not encoded but stand in the key as a NUL byte and a letter,
    in quotes (a sentinel: distinct from the placeholders' digits and, like them, from any
    JSON orjson writes): ~10k instructions of encoding fewer per pod create."""
    spec = args[0] if args else kwargs.get("spec")
    if type(spec) is dict:
        volumes, tolerations = spec.get("volumes"), spec.get("tolerations")
        if (volumes or tolerations) and (sub := _with_sentinels(spec, volumes, tolerations)) is not None:
            if args:
                args = (sub, *args[1:])
            else:
                kwargs = {**kwargs, "spec": sub}
    else:
        volumes = None
    try:                                   # json_key, without its call
        k = orjson.dumps((args, kwargs) if kwargs else args)
    except _ENCODE_ERRORS:
        return None
    if not volumes or type(volumes) is not list:
        return k
    n = 0
    for v in volumes:
        name = v.get("name") if type(v) is dict else None
        if type(name) is str and _GENERATED_VOLUME_NAME(name):
            k = k.replace(b'"%s"' % name.encode(), _PLACEHOLDERS[n] if n < len(_PLACEHOLDERS) else b'"\0%d"' % n)
            n += 1
    return k


# id -> (the shared value, its sentinel): see shared(). The value is held, so its id is never
# another object's.
_SHARED: dict[int, tuple[Any, orjson.Fragment]] = {}


def shared(value: T, tag: str) -> T:
    """Declare value (a dict) a constant that admission puts into many pods as the very same
    object, never changed (stored objects are not changed in place): pod_spec_key writes a
    sentinel for it, `"<NUL><tag>"`, instead of its encoding. Only that object is so written:
    an equal value elsewhere (a pod read back from storage) is encoded, and only misses the
    memo. tag: ASCII letters, one per value. Returns value."""
    assert tag.isascii() and tag.isalpha() and tag not in _TAGS, tag
    _TAGS.add(tag)
    _SHARED[id(value)] = (value, orjson.Fragment(b'"\0' + tag.encode() + b'"'))
    return value


_TAGS: set[str] = set()


def _with_sentinels(spec: dict[str, Any], volumes: Any, tolerations: Any) -> dict[str, Any] | None:
    """spec with the shared values in its volumes' projected sources and in its tolerations
    replaced by their sentinels (new dicts and lists; spec itself is not changed), or None
    when it holds none."""
    known = _SHARED
    sub = None
    if volumes and type(volumes) is list:
        new_volumes = None
        for i, v in enumerate(volumes):
            if type(v) is dict and (p := v.get("projected")) is not None and (s := known.get(id(p))) is not None \
                    and s[0] is p:
                if new_volumes is None:
                    new_volumes = list(volumes)
                new_volumes[i] = {**v, "projected": s[1]}
        if new_volumes is not None:
            sub = dict(spec)
            sub["volumes"] = new_volumes
    if tolerations and type(tolerations) is list:
        new_tolerations = None
        for i, t in enumerate(tolerations):
            if (s := known.get(id(t))) is not None and s[0] is t:
                if new_tolerations is None:
                    new_tolerations = list(tolerations)
                new_tolerations[i] = s[1]
        if new_tolerations is not None:
            if sub is None:
                sub = dict(spec)
            sub["tolerations"] = new_tolerations
    return sub


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
