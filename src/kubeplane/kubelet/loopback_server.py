"""The HTTPS server of a kubelet that runs inside `kubeplane up`, started when first needed.

An in-process kubelet needs no server for pods/log or metrics (the API server calls it
directly), but nodes/proxy passes whole HTTP requests on (/metrics, /stats/summary, /healthz,
/pods, /containerLogs, ...). Rather than a second way to answer each path, the kubelet gets the
same server a standalone kubelet runs (server.py), on the first nodes/proxy request: on
127.0.0.1, a free port, with a random token that only this process (its API server) knows.
It stops with the kubelet.

    port, token = await start_for(kubelet)      # the same pair on every later call
    await stop_for(kubelet)
"""
from __future__ import annotations

import asyncio
import secrets
import weakref
from typing import Any

_SERVERS: weakref.WeakKeyDictionary[Any, tuple[Any, str]] = weakref.WeakKeyDictionary()
_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


async def start_for(kubelet: Any) -> tuple[int, str]:
    """(port, token) of the kubelet's loopback server, started on the first call."""
    async with _LOCKS.setdefault(kubelet, asyncio.Lock()):
        hit = _SERVERS.get(kubelet)
        if hit is None:
            from .server import KubeletServer
            token = secrets.token_urlsafe(32)
            server = KubeletServer(kubelet, token=token, address="127.0.0.1", port=0)
            await server.start()
            hit = _SERVERS[kubelet] = (server, token)
        return hit[0].port, hit[1]


async def stop_for(kubelet: Any) -> None:
    hit = _SERVERS.pop(kubelet, None)
    if hit is not None:
        await hit[0].stop()
