"""run_kubelet (what `kubeplane up --nodes N` calls) and the `kubeplane kubelet` command line."""
from __future__ import annotations

import argparse
import asyncio

import pytest

from kubeplane.testing.fake import FakeClientset
from kubeplane.cmd import kubelet as kubelet_cmd
from kubeplane.kubelet import run_kubelet
from kubeplane.kubelet.runtime import new_runtime
from kubeplane.utils.clock import FakeClock

from kubelet_testutil import advance


async def test_run_kubelet_registers_nodes_runs_pods_and_records_events() -> None:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    task = asyncio.ensure_future(run_kubelet(cs, nodes=3, clock=clock, node_prefix="sim-"))
    try:
        await advance(clock, 1)
        names = sorted(n.metadata.name for n in (await cs.core_v1().nodes().list()).items)
        assert names == ["sim-0", "sim-1", "sim-2"]
        await cs.core_v1().pods("default").create({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"nodeName": "sim-1", "containers": [{"name": "nginx", "image": "nginx"}]}})
        await advance(clock, 2, step=0.1)
        p = await cs.core_v1().pods("default").get("web")
        assert p.status.phase == "Running" and p.status.host_ip == "172.18.0.3"
        await advance(clock, 1)
        events = (await cs.core_v1().events("default").list()).items
        by_reason = {e.reason: e for e in events}
        assert {"Pulled", "Created", "Started"} <= set(by_reason)
        started = by_reason["Started"]
        assert started.involved_object.field_path == "spec.containers{nginx}"
        assert started.source.component == "kubelet" and started.source.host == "sim-1"
        assert started.message == "Started container nginx"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_unknown_runtime_and_profile_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown runtime"):
        new_runtime("docker")
    with pytest.raises(ValueError, match="unknown stage profile"):
        new_runtime("sim", profile="nope")


def test_command_line() -> None:
    parser = argparse.ArgumentParser()
    kubelet_cmd.add_parser(parser.add_subparsers())
    args = parser.parse_args(["kubelet", "--kubeconfig", "kc", "--nodes", "5", "--profile", "crash-loop",
                              "--node-prefix", "n-"])
    assert (args.nodes, args.runtime, args.profile, args.node_prefix) == (5, "sim", "crash-loop", "n-")
    assert args.func is kubelet_cmd.run


async def test_loopback_server_for_nodes_proxy_starts_once_and_stops_with_the_kubelet() -> None:
    """An in-process kubelet's server (nodes/proxy) starts on the first ask, answers with its
    token only, and is gone once the kubelet stops."""
    import aiohttp

    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    registry: dict[str, object] = {}
    task = asyncio.ensure_future(run_kubelet(cs, nodes=1, clock=clock, node_prefix="sim-", node_registry=registry))
    try:
        await advance(clock, 1)
        kl = registry["sim-0"]
        port, token = await kl.kubelet_server()          # type: ignore[attr-defined]
        assert (port, token) == await kl.kubelet_server()  # type: ignore[attr-defined]
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as s:
            async with s.get(f"https://127.0.0.1:{port}/healthz", headers={"Authorization": f"Bearer {token}"}) as r:
                assert (r.status, await r.text()) == (200, "ok")
            async with s.get(f"https://127.0.0.1:{port}/healthz") as r:
                assert r.status == 401
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)
