"""RateLimitedTransport: client-go's per-client token bucket (rest.Config QPS/Burst)."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

from kubeplane.client.transport import RateLimitedTransport, RawResponse
from kubeplane.utils.clock import FakeClock


class Recording:
    accepts_objects = True

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.sent: list[tuple[str, float]] = []
        self.closed = False

    async def request(self, method: str, path: str, query: Any = None, body: Any = None,
                      content_type: str = "application/json") -> RawResponse:
        self.sent.append((path, self.clock.monotonic()))
        return RawResponse(201, b"{}")

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        self.sent.append((path, self.clock.monotonic()))
        yield b"line"

    async def close(self) -> None:
        self.closed = True


async def test_burst_goes_at_once_then_one_per_interval() -> None:
    """qps 10, burst 2: two requests at t=0, the third 100 ms later, the fourth at 200 ms (the
    bucket's debt orders them as they came). Upstream: tokenBucketRateLimiter.Wait."""
    clock = FakeClock()
    inner = Recording(clock)
    t = RateLimitedTransport(inner, 10.0, 2, clock=clock)
    t0 = clock.monotonic()
    tasks = [asyncio.ensure_future(t.request("POST", f"/p{i}")) for i in range(4)]
    await asyncio.sleep(0)
    assert [p for p, _ in inner.sent] == ["/p0", "/p1"]
    for _ in range(2):
        clock.step(0.1)
        for _ in range(3):
            await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert [(p, round(at - t0, 3)) for p, at in inner.sent] == [("/p0", 0.0), ("/p1", 0.0), ("/p2", 0.1), ("/p3", 0.2)]


async def test_a_watch_takes_a_token_and_the_rest_passes_through() -> None:
    clock = FakeClock()
    inner = Recording(clock)
    t = RateLimitedTransport(inner, 1.0, 1, clock=clock)
    assert t.accepts_objects is True and t.clock is clock
    assert [line async for line in t.stream("/w", {})] == [b"line"]
    later = asyncio.ensure_future(t.request("GET", "/g"))
    await asyncio.sleep(0)
    assert [p for p, _ in inner.sent] == ["/w"]          # the watch took the only token
    clock.step(1.0)
    await later
    assert [p for p, _ in inner.sent] == ["/w", "/g"]
    await t.close()
    assert inner.closed
