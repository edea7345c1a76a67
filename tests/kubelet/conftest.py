"""Kubelet fixtures: a FakeClientset (real in-process API server) on a FakeClock, and a
running Kubelet whose clock the test moves with `advance` (never sleeping)."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable

import pytest

from kubeplane.testing.fake import FakeClientset
from kubeplane.kubelet.kubelet import Kubelet, KubeletOptions
from kubeplane.kubelet.runtime.sim import SimRuntime
from kubeplane.kubelet.runtime.sim.lifecycle import Stage, load_profile
from kubeplane.utils.clock import FakeClock

from kubelet_testutil import settle


@dataclass
class Env:
    clock: FakeClock
    cs: FakeClientset
    kubelet: Kubelet
    runtime: SimRuntime
    events: list[tuple[str, str, str, str]]

    async def create_pod(self, pod: dict[str, Any]) -> Any:
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        pod.setdefault("metadata", {}).setdefault("namespace", "default")
        pod.setdefault("spec", {}).setdefault("nodeName", self.kubelet.node_names[0])
        return await self.cs.core_v1().pods("default").create(pod)

    async def pod(self, name: str) -> Any:
        return await self.cs.core_v1().pods("default").get(name)


class _Recorder:
    def __init__(self, out: list[tuple[str, str, str, str]]) -> None:
        self.out = out

    def event(self, ref: Any, type_: str, reason: str, message: str) -> None:
        self.out.append((ref.field_path or "", type_, reason, message))


class _Broadcaster:
    def __init__(self, out: list[tuple[str, str, str, str]]) -> None:
        self.out = out

    def new_recorder(self, component: str, host: str = "") -> _Recorder:
        return _Recorder(self.out)


def zero_delays(stages: list[Stage]) -> list[Stage]:
    """The profile with every delay removed (deterministic tests, benchmarks)."""
    from dataclasses import replace
    from kubeplane.kubelet.runtime.sim.lifecycle import Delay
    return [replace(s, delay=Delay()) for s in stages]


@pytest.fixture
async def make_env() -> AsyncIterator[Callable[..., Any]]:
    tasks: list[asyncio.Task[None]] = []

    async def make(profile: str | list[Stage] = "default", *, nodes: int = 1, zero: bool = False,
                   options: KubeletOptions = KubeletOptions()) -> Env:
        clock = FakeClock()
        cs = await FakeClientset.new(clock=clock)
        stages = load_profile(profile) if isinstance(profile, str) else profile
        runtime = SimRuntime(profile=zero_delays(stages) if zero else stages, clock=clock)
        events: list[tuple[str, str, str, str]] = []
        kl = Kubelet(cs, node_names=[f"node-{i}" for i in range(nodes)], runtime=runtime, clock=clock,
                     options=options, broadcaster=_Broadcaster(events))
        tasks.append(asyncio.ensure_future(kl.run()))
        await settle(300)
        return Env(clock, cs, kl, runtime, events)

    yield make
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
