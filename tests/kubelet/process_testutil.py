"""Helpers for the process runtime tests: real processes on the real clock, polled with deadlines."""
from __future__ import annotations

import asyncio
import socket
import sys
import time
from typing import Any, Awaitable, Callable

from kubeplane.api.types import core_v1, from_dict

PY = sys.executable


async def eventually(pred: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    """Poll pred (sync or async) until it returns something truthy; fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def py(code: str, **extra: Any) -> dict[str, Any]:
    """A container spec running `python -c code`."""
    return {"name": "c", "image": "python:3", "command": [PY, "-c", code], **extra}


def make_pod(containers: list[dict[str, Any]], *, name: str = "p", uid: str = "uid-1",
             **spec: Any) -> core_v1.Pod:
    return from_dict({"metadata": {"name": name, "namespace": "default", "uid": uid, "labels": {"app": "x"}},
                      "spec": {"nodeName": "node-0", "containers": containers, **spec}}, core_v1.Pod)


async def read_all(it: Any) -> bytes:
    return b"".join([chunk async for chunk in it])
