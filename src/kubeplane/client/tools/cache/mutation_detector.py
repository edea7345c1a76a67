"""The cache mutation detector: proof that nobody modifies the objects an informer hands out.

Every handler and lister of a process shares the informer's objects (under `kubeplane up`, the
controllers, scheduler and kubelets share one cache), so one component that changes an object
in place corrupts what all the others see. With KUBE_CACHE_MUTATION_DETECTOR=true in the
environment each informer's store keeps the encoded bytes of every object put into it (by the
reflector, or by a test filling a lister by hand) and, every second and when the informer stops,
encodes the object again: a difference names the object and the changed
fields, and fails loudly (the process exits, as upstream panics; the test suite fails the test).
Off (the default), no detector exists and an informer pays nothing.

The bytes are msgspec's encoding, a few microseconds per object, and the objects of the last two
to four minutes are kept: a tool for tests, never for production.

Upstream: client-go tools/cache/mutation_detector.go (defaultCacheMutationDetector).
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any, Callable

import orjson

from ....api import types
from .store import IndexFunc, Indexer, KeyFunc, meta_namespace_key_func

log = logging.getLogger(__name__)

ENV = "KUBE_CACHE_MUTATION_DETECTOR"
_TRUE = ("1", "t", "T", "TRUE", "true", "True")     # Go's strconv.ParseBool


def enabled() -> bool:
    """Read at each informer's creation, so a test suite can turn it on before building any."""
    return os.environ.get(ENV, "") in _TRUE


def _panic(message: str) -> None:
    """Upstream panics: a process whose cache was modified cannot be trusted to go on."""
    log.critical(message)
    logging.shutdown()
    os._exit(70)


# What a detected mutation does; the test suite records it instead (tests/conftest.py).
failure_func: Callable[[str], None] = _panic

# Every detector made since the last check_all(), so a test can check them all when it ends.
_live: list[CacheMutationDetector] = []
_warned = False


class CacheMutationDetector:
    """Keeps (object, its bytes) for everything put into one informer's store; compare_objects()
    re-encodes them."""

    def __init__(self, name: str, *, period: float = 1.0, retain: float = 120.0) -> None:
        self.name, self.period, self.retain = name, period, retain
        self.cached: dict[int, tuple[Any, bytes]] = {}       # id(obj) -> (obj, bytes when delivered)
        self.retained: dict[int, tuple[Any, bytes]] = {}     # the generation before
        self.last_rotated = time.monotonic()
        _live.append(self)

    def add_object(self, obj: Any) -> None:
        """Upstream: AddObject — only API objects (Structs; a tombstone is none) are watched."""
        if isinstance(obj, types.Struct):
            key = id(obj)
            if key not in self.cached:
                self.cached[key] = (obj, types.encode(obj))

    def altered(self) -> list[str]:
        """One message per object whose encoding changed since it was delivered."""
        out = []
        for gen in (self.cached, self.retained):
            # A copy (atomic under the GIL): a test's thread may check the informers of a control
            # plane running on another (kubeplane.testing.ControlPlane) while they add objects.
            for obj, saved in list(gen.values()):
                now = types.encode(obj)
                if now != saved:
                    out.append(f"CACHE {self.name} ALTERED: {_describe(obj)}: {_diff(saved, now)}")
        return out

    def compare_objects(self) -> bool:
        """Report every altered object through failure_func; True if there was one.

        Upstream: CompareObjects"""
        messages = self.altered()
        if messages:
            failure_func("\n".join(messages) + f"\ncache {self.name} modified")
        return bool(messages)

    def rotate(self) -> None:
        """Forget the objects of two generations ago (upstream's retainDuration)."""
        if time.monotonic() - self.last_rotated > self.retain:
            self.retained, self.cached = self.cached, {}
            self.last_rotated = time.monotonic()

    async def run(self) -> None:
        """Compare every `period` seconds of real time (not the informer's clock: a fake clock
        must not see an extra waiter) until cancelled, then once more. Upstream: Run"""
        try:
            while True:
                self.rotate()
                self.compare_objects()
                await asyncio.sleep(self.period)
        finally:
            self.compare_objects()


class DetectingIndexer(Indexer):
    """The store of an informer with a detector: every object put into it is shown to it first."""

    def __init__(self, detector: CacheMutationDetector, key_func: KeyFunc, indexers: dict[str, IndexFunc]) -> None:
        super().__init__(key_func, indexers)
        self.detector = detector

    def _put(self, key: str, obj: Any) -> None:
        self.detector.add_object(obj)
        super()._put(key, obj)


def new_cache_mutation_detector(name: str) -> CacheMutationDetector | None:
    """A detector when KUBE_CACHE_MUTATION_DETECTOR is on, else None. Upstream: NewCacheMutationDetector"""
    global _warned
    if not enabled():
        return None
    if not _warned:                              # upstream warns per informer; once is enough
        log.warning("Mutation detector is enabled, this will result in memory leakage.")
        _warned = True
    return CacheMutationDetector(name)


def check_all() -> list[str]:
    """Compare the objects of every detector made since the last call, then forget them all
    (a test suite calls it as each test ends). Returns the messages, without failure_func."""
    out = [m for d in list(_live) for m in d.altered()]
    _live.clear()
    return out


def _describe(obj: Any) -> str:
    meta = getattr(obj, "metadata", None)
    rv = getattr(meta, "resource_version", None) or ""
    return f"{type(obj).__name__} {meta_namespace_key_func(obj) if meta else '?'} (resourceVersion {rv})"


def _diff(before: bytes, after: bytes, limit: int = 10) -> str:
    """The changed JSON paths, as `path: old -> new` (the first `limit` of them)."""
    changes: list[str] = []

    def walk(path: str, a: Any, b: Any) -> None:
        if a == b or len(changes) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(a.keys() | b.keys()):
                walk(f"{path}.{k}", a.get(k), b.get(k))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(f"{path}[{i}]", x, y)
        else:
            changes.append(f"{path or '.'}: {_short(a)} -> {_short(b)}")

    walk("", orjson.loads(before), orjson.loads(after))
    return "; ".join(changes)


def _short(v: Any) -> str:
    s = orjson.dumps(v).decode()
    return s if len(s) <= 80 else s[:77] + "..."
