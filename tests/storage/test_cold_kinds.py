"""Cold kinds (memory.COLD_PREFIXES): the store keeps only the bytes of their versions.

Events are written by the thousand and rarely read; their decoded dicts were ~3.7 times their
JSON (benchmarks/memory_costs.py). What a reader gets must not change: the same object, decoded
on access.
"""
from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import pytest

from kubeplane.storage import MemoryStorage
from kubeplane.storage.interface import KeyValue, LeanKeyValue
from kubeplane.storage.memory import is_cold
from kubeplane.storage.sqlite import SqliteStorage

EVENT = "/registry/events/default/web.1"
POD = "/registry/pods/default/web"


def event(count: int) -> dict[str, Any]:
    return {"kind": "Event", "metadata": {"name": "web.1", "namespace": "default"}, "reason": "Started",
            "count": count}


def test_only_events_are_cold() -> None:
    assert is_cold(EVENT)
    assert not is_cold(POD)
    assert not is_cold("/registry/eventsx/a")


def test_a_lean_key_value_decodes_on_access_and_stays_immutable() -> None:
    kv = LeanKeyValue(EVENT, b'{"a":1}', 1, 2)
    assert kv.obj == {"a": 1}
    assert kv.obj is not kv.obj                     # nothing is kept: a fresh dict per access
    assert kv == KeyValue(EVENT, b'{"a":1}', {"a": 1}, 1, 2)
    assert kv.lean() == kv and KeyValue(EVENT, b'{"a":1}', {"a": 1}, 1, 2).lean() == kv
    with pytest.raises(AttributeError):
        kv.value = b"{}"                            # type: ignore[misc]
    with pytest.raises(AttributeError):
        kv.obj = {}                                 # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(kv)


async def test_the_store_keeps_events_lean_and_serves_them_unchanged() -> None:
    s = MemoryStorage()
    w = s.watch("/registry/", 0)
    created = await s.create(EVENT, event(1))
    assert not isinstance(created, LeanKeyValue)     # the writer's copy still has its object
    updated = await s.update(EVENT, event(2))
    await s.create(POD, {"kind": "Pod", "metadata": {"name": "web"}})
    stored = await s.get(EVENT)
    assert stored is not None and isinstance(stored, LeanKeyValue)
    assert stored.obj == updated.obj and stored.obj["count"] == 2
    evs = [await asyncio.wait_for(anext(w), 5) for _ in range(3)]
    assert [(e.type, isinstance(e.kv, LeanKeyValue)) for e in evs] == [("ADDED", True), ("MODIFIED", True), ("ADDED", False)]
    assert evs[1].prev is not None and evs[1].prev.obj["count"] == 1
    gone = await s.delete(EVENT)
    assert gone.obj["count"] == 2
    s._check_invariants()


async def test_sqlite_reloads_events_lean(tmp_path: pathlib.Path) -> None:
    s = SqliteStorage(tmp_path / "db")
    await s.start()
    await s.create(EVENT, event(3))
    await s.create(POD, {"kind": "Pod", "metadata": {"name": "web"}})
    await s.close()
    s = SqliteStorage(tmp_path / "db")
    await s.start()
    ev, pod = await s.get(EVENT), await s.get(POD)
    assert ev is not None and pod is not None
    assert isinstance(ev, LeanKeyValue) and ev.obj["count"] == 3
    assert not isinstance(pod, LeanKeyValue)
    await s.close()


def test_a_stored_value_holds_no_more_heap_than_its_length() -> None:
    """orjson returns its whole output buffer (4 KiB at least): encode() copies it to size."""
    import tracemalloc

    from kubeplane.storage.memory import encode
    obj = event(1)
    tracemalloc.start()
    try:
        values = [encode(obj) for _ in range(100)]
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert used < 100 * (len(values[0]) + 200)
