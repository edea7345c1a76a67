"""Retrying etcd calls as etcd's Go client does: a read again on another member when the one
asked went away, a write only when it certainly never reached etcd.

A member killed or partitioned fails the calls in flight on its connection (UNAVAILABLE, or
"Stream removed" when the HTTP/2 stream was cut); the channel's round-robin balancer moves on to
the other members. Upstream's clientv3 retry interceptor repeats such a call for repeatable
requests (Range) after a short wait, and a mutation (Txn, Compact) only when the error says no
connection was available: a Txn cut in flight may have been committed, so repeating it could
apply it twice (its guard would then fail as a conflict). Everything else reaches the caller.

Upstream: go.etcd.io/etcd/client/v3 retry_interceptor.go (isSafeRetry,
isSafeRetryImmutableRPC, isSafeRetryMutableRPC) and options.go (defaultBackoffWaitBetween 25 ms,
defaultBackoffJitterFraction 0.10; defaultUnaryMaxRetries is far more than the 100 here: 2.5 s
of waiting outlasts a member's failover, and the API server's own request deadline bounds it).
"""
from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

WAIT_BETWEEN = 0.025
JITTER = 0.10
MAX_RETRIES = 100
_UNSENT = ("failed to connect", "no address available", "there is no connection available")


def _code_and_details(e: BaseException) -> tuple[str, str]:
    code, details = getattr(e, "code", None), getattr(e, "details", None)
    name = getattr(code(), "name", "") if callable(code) else ""
    return name, (details() or "") if callable(details) else ""


def repeatable_may_retry(e: BaseException) -> bool:
    """A read's failure that another attempt (on another member) may not meet."""
    code, details = _code_and_details(e)
    return code == "UNAVAILABLE" or (code in ("UNKNOWN", "INTERNAL") and "Stream removed" in details)


def mutation_may_retry(e: BaseException) -> bool:
    """A write's failure before any member received it."""
    code, details = _code_and_details(e)
    return code == "UNAVAILABLE" and any(s in details for s in _UNSENT)


async def call(rpc: Callable[..., Awaitable[Any]], request: Any, may_retry: Callable[[BaseException], bool],
               **kwargs: Any) -> Any:
    for attempt in range(MAX_RETRIES + 1):
        try:
            return await rpc(request, **kwargs)
        except Exception as e:               # noqa: BLE001 - grpc.aio.AioRpcError; anything else is raised
            if attempt == MAX_RETRIES or not may_retry(e):
                raise
        await asyncio.sleep(WAIT_BETWEEN * (1 + random.uniform(-JITTER, JITTER)))
    raise AssertionError("unreachable")


class RetryingKV:
    """etcd's KV service with the retries above (the other methods pass through)."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub

    def Range(self, request: Any, **kwargs: Any) -> Awaitable[Any]:  # noqa: N802 - the RPC's name
        return call(self._stub.Range, request, repeatable_may_retry, **kwargs)

    def Txn(self, request: Any, **kwargs: Any) -> Awaitable[Any]:  # noqa: N802
        return call(self._stub.Txn, request, mutation_may_retry, **kwargs)

    def Compact(self, request: Any, **kwargs: Any) -> Awaitable[Any]:  # noqa: N802
        return call(self._stub.Compact, request, mutation_may_retry, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stub, name)
