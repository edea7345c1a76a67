"""A pod spec's JSON, handed from validation to the store, so a pod write encodes its spec once.

The pod validation memo (api/validation/memo.py pod_spec_key) encodes a pod's spec for its key;
the store (storage/memory.py encode) then encodes the whole pod, spec included, for the stored
bytes: ~1.3 KB of the same JSON twice on every pod create (~15k instructions). So validation
offers the spec and its bytes here, and the store, when the object it encodes holds that very
spec object, embeds the bytes (orjson.Fragment) instead of encoding the spec again: the same
bytes, as both encode with orjson's defaults.

One slot, taken (emptied) by the next encode that finds it: between a pod's validation and its
write nothing changes the spec (strategies and mutating admission run before validation,
validating admission only reads, a retried generated name changes metadata), and whatever
write comes next empties it, so bytes offered for a request that then failed are never used
for a later write of a changed spec. A miss (another request's offer in between) only costs
the encoding.
"""
from __future__ import annotations

from typing import Any

import orjson

# (the spec dict, its orjson encoding) or None. A tuple is written and read whole (one
# reference, atomic under the GIL: validation may run in a worker thread).
slot: tuple[dict[str, Any], bytes] | None = None


def offer(spec: dict[str, Any], data: bytes) -> None:
    """spec's orjson.dumps, for the write that stores an object holding spec."""
    global slot
    slot = (spec, data)


def take(obj: dict[str, Any]) -> dict[str, Any]:
    """obj, or a copy of it whose spec is the offered bytes when obj holds the offered spec;
    empties the slot either way (encode it with orjson.dumps)."""
    global slot
    offered, slot = slot, None
    if offered is None or offered[0] is not obj.get("spec"):
        return obj
    return {**obj, "spec": orjson.Fragment(offered[1])}
