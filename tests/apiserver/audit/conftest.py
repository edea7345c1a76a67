"""Auditing fixtures: the API server of tests/apiserver/conftest.py with a policy and a log
backend writing into memory."""
from __future__ import annotations

import asyncio
from typing import Any, Callable

import orjson
import pytest

from kubeplane.apiserver.audit import log as auditlog
from kubeplane.apiserver.audit import policy as p
from kubeplane.apiserver.audit.filter import Auditor


class Lines:
    """A Writer keeping what the backend writes."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def flush(self) -> None:
        pass

    def events(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in self.data.splitlines()]

    async def wait_for(self, n: int) -> list[dict[str, Any]]:
        """The events once there are n (one the request did not wait for is written by the thread)."""
        for _ in range(500):
            if len(evs := self.events()) >= n:
                return evs
            await asyncio.sleep(0.01)
        raise AssertionError(f"{len(self.events())} events, not {n}")


@pytest.fixture
def audited(api: Any) -> Callable[..., Lines]:
    """audited(policy_yaml, mode=...) -> the Lines the events go to."""
    backends: list[auditlog.LogBackend] = []

    def configure(policy_yaml: str, mode: str = auditlog.MODE_BLOCKING, fmt: str = auditlog.FORMAT_JSON) -> Lines:
        out = Lines()
        backend = auditlog.LogBackend(out, mode=mode, fmt=fmt)
        backends.append(backend)
        policy = p.load_policy(policy_yaml.encode())
        api.server.audit = Auditor(api.server, p.PolicyRuleEvaluator(policy), backend)
        return out

    yield configure       # type: ignore[misc]
    for b in backends:
        b.shutdown()
