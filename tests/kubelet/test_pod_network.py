"""The process runtime's pod network: host-local IPAM on disk, then real network namespaces
(skipped, with the reason, where this process cannot create them). Every namespace, veth and
bridge a test makes has a name of its own and is removed by the test."""
from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import pathlib
import urllib.request
from typing import Any, AsyncIterator

import pytest

from kubeplane.kubelet.network import PodNetwork, netns_name, teardown_recorded
from kubeplane.kubelet.network.ipam import IPAM, RangeFull
from kubeplane.kubelet.network.pod_network import bridge_name, veth_name
from kubeplane.kubelet.runtime import PROBE_SUCCESS, RUNNING
from kubeplane.kubelet.runtime.process import ProcessRuntime
from kubeplane.kubelet.runtime.process.records import kill_recorded

from netns_testutil import free_cidr, link_exists, netns_list, require_netns, unique_uid
from process_testutil import PY, eventually, free_port, make_pod

# --- IPAM (no privileges needed) ----------------------------------------------------------------


def test_ipam_skips_the_gateway_goes_round_robin_and_survives_a_restart(tmp_path: pathlib.Path) -> None:
    ipam = IPAM(tmp_path / "ips", "10.9.8.0/29")          # hosts .1-.6: .1 is the gateway
    assert ipam.gateway == "10.9.8.1"
    a = ipam.allocate("a", netns="kp-a", veth="veth1")
    b = ipam.allocate("b", netns="kp-b", veth="veth2")
    assert (a, b) == ("10.9.8.2", "10.9.8.3")
    assert ipam.allocate("a", netns="kp-a", veth="veth1") == a          # a pod keeps its address
    ipam.release("a")
    again = IPAM(tmp_path / "ips", "10.9.8.0/29")                      # a restarted kubelet
    assert [(x.ip, x.uid, x.netns, x.veth) for x in again.allocations()] == [("10.9.8.3", "b", "kp-b", "veth2")]
    assert again.allocate("c", netns="", veth="") == "10.9.8.4"        # after the last reserved, not .2
    for uid in ("d", "e", "f"):
        again.allocate(uid, netns="", veth="")
    assert again.get("f").ip == "10.9.8.2"                             # wrapped round to the free one
    with pytest.raises(RangeFull, match="no IP addresses available in range set: 10.9.8.2-10.9.8.6"):
        again.allocate("g", netns="", veth="")


def test_ipam_ignores_unreadable_records(tmp_path: pathlib.Path) -> None:
    ipam = IPAM(tmp_path / "ips", "10.9.8.0/24")
    (tmp_path / "ips").mkdir()
    (tmp_path / "ips" / "10.9.8.2").write_text("not json")
    assert ipam.allocations() == []
    assert ipam.allocate("a", netns="", veth="") == "10.9.8.3"        # .2 is taken, whatever it holds


def test_host_mode_decides_nothing_and_covers_no_node(tmp_path: pathlib.Path) -> None:
    net = PodNetwork("host", lambda: tmp_path)
    net.add_node("n", "10.9.8.0/24")
    assert (net.enabled, net.covers("n"), net.netns_path("x")) == (False, False, None)
    with pytest.raises(ValueError, match="unknown pod network mode"):
        PodNetwork("bridge", lambda: tmp_path)


async def test_a_process_runtime_in_host_mode_reports_the_host_address(tmp_path: pathlib.Path) -> None:
    rt = ProcessRuntime(root_dir=tmp_path / "kubelet")
    rt.add_node("node-0", "127.0.0.1", "10.244.0.0/24")
    rt.run_pod_sandbox(make_pod([]))
    assert rt.pod_status("uid-1").sandbox.ip == "127.0.0.1" and rt.netns_path("uid-1") is None
    await rt.stop_all()


# --- real namespaces ----------------------------------------------------------------------------

SERVER = ("import http.server, os, sys\n"
          "class H(http.server.BaseHTTPRequestHandler):\n"
          "    def do_GET(self):\n"
          "        body = (os.environ['HOSTNAME'] + ' ' + os.environ['MY_IP']).encode()\n"
          "        self.send_response(200); self.end_headers(); self.wfile.write(body)\n"
          "    def log_message(self, *a): pass\n"
          "http.server.ThreadingHTTPServer(('0.0.0.0', int(sys.argv[1])), H).serve_forever()\n")


@pytest.fixture
async def nrt(tmp_path: pathlib.Path) -> AsyncIterator[ProcessRuntime]:
    require_netns()
    events: list[tuple[str, str]] = []
    r = ProcessRuntime(root_dir=tmp_path / "kubelet", pod_network="netns",
                       events=lambda ref, t, reason, msg: events.append((reason, msg)))
    r.recorded = events                    # type: ignore[attr-defined]
    r.cidr = free_cidr()                   # type: ignore[attr-defined]
    r.add_node("node-0", "127.0.0.1", r.cidr)   # type: ignore[attr-defined]
    try:
        yield r
    finally:
        await r.stop_all()
        kill_recorded(tmp_path / "kubelet")


def server_pod(name: str, port: int, **spec: Any) -> Any:
    c = {"name": "c", "image": "python:3", "command": [PY, "-c", SERVER, str(port)],
         "env": [{"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
         "readinessProbe": {"httpGet": {"port": port, "path": "/"}},
         "livenessProbe": {"exec": {"command": [PY, "-c", f"import socket; socket.create_connection(('127.0.0.1', {port}))"]}}}
    return make_pod([c], name=name, uid=unique_uid(name), **spec)


async def ready_ip(rt: ProcessRuntime, pod: Any) -> str:
    rt.run_pod_sandbox(pod)
    uid = pod.metadata.uid
    sb = await eventually(lambda: (s := rt.pod_status(uid).sandbox).state == "Ready" and s, 10, "the sandbox")
    rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    await eventually(lambda: (s := rt.pod_status(uid).latest("c")) is not None and s.state == RUNNING, 10, "running")
    return str(sb.ip)


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return str(resp.read().decode())


async def fetch(url: str) -> str:
    async def attempt() -> str:
        try:
            return await asyncio.to_thread(get, url)
        except OSError:
            return ""
    return str(await eventually(attempt, 10, url))


async def test_two_pods_listen_on_one_port_each_at_its_own_address(nrt: ProcessRuntime) -> None:
    port = free_port()
    a, b = server_pod("a", port), server_pod("b", port)
    ip_a, ip_b = await ready_ip(nrt, a), await ready_ip(nrt, b)
    net = ipaddress.ip_network(nrt.cidr)                  # type: ignore[attr-defined]
    assert ip_a != ip_b and {ipaddress.ip_address(ip_a), ipaddress.ip_address(ip_b)} <= set(net.hosts())
    assert str(next(net.hosts())) not in (ip_a, ip_b)      # .1 is the bridge's
    assert await fetch(f"http://{ip_a}:{port}/") == f"a {ip_a}"     # status.podIP in its env too
    assert await fetch(f"http://{ip_b}:{port}/") == f"b {ip_b}"
    # Probes: httpGet targets the pod's IP; exec runs inside the pod's namespace, where the
    # server is on 127.0.0.1 (the host's 127.0.0.1:port has nothing).
    cid = nrt.pod_status(a.metadata.uid).latest("c").id
    assert await nrt.probe(cid, "readiness") == PROBE_SUCCESS
    assert await nrt.probe(cid, "liveness") == PROBE_SUCCESS
    path = nrt.netns_path(a.metadata.uid)
    assert path == f"/run/netns/{netns_name(a.metadata.uid)}" and netns_name(a.metadata.uid) in netns_list()
    inside = (await asyncio.create_subprocess_exec("ip", "-n", netns_name(a.metadata.uid), "-j", "route", "show",
                                                   stdout=asyncio.subprocess.PIPE)).communicate()
    routes = json.loads((await inside)[0])
    assert {"dst": "default", "gateway": str(next(net.hosts()))}.items() <= routes[0].items()


async def test_removing_a_pod_removes_its_namespace_veth_and_address(nrt: ProcessRuntime) -> None:
    pod = server_pod("gone", free_port())
    uid = pod.metadata.uid
    await ready_ip(nrt, pod)
    assert netns_name(uid) in netns_list() and link_exists(veth_name(uid))
    nrt.stop_pod_sandbox(uid)
    nrt.remove_pod(uid)
    await eventually(lambda: netns_name(uid) not in netns_list() and not link_exists(veth_name(uid))
                     and nrt.network.allocation(uid) is None, 10, "clean-up")     # the address goes last


async def test_host_network_pods_stay_on_the_host(nrt: ProcessRuntime) -> None:
    pod = make_pod([], uid=unique_uid("h"), hostNetwork=True)
    nrt.run_pod_sandbox(pod)
    sb = nrt.pod_status(pod.metadata.uid).sandbox
    assert (sb.state, sb.ip) == ("Ready", "127.0.0.1") and nrt.netns_path(pod.metadata.uid) is None


async def test_a_restart_keeps_readopted_pods_namespaces_and_removes_the_rest(tmp_path: pathlib.Path) -> None:
    require_netns()
    root, cidr = tmp_path / "kubelet", free_cidr()
    first = ProcessRuntime(root_dir=root, pod_network="netns")
    first.add_node("node-0", "127.0.0.1", cidr)
    port = free_port()
    kept, lost = server_pod("kept", port), server_pod("lost", port)
    try:
        ip_kept = await ready_ip(first, kept)
        await ready_ip(first, lost)
        await first.aclose()                  # the kubelet goes (as after kill -9: nothing torn down)
        bridge = bridge_name(root.resolve(), "node-0")
        assert link_exists(bridge) and netns_name(kept.metadata.uid) in netns_list()
        # While it was down, "lost" went away: its containers and records, but not its network.
        lost_dir = root / "pods" / lost.metadata.uid
        for rec in (lost_dir / "containers").glob("*.state"):
            os.killpg(json.loads(rec.read_text())["pid"], 9)
        import shutil
        for _ in range(200):                  # a killed container's monitor may still write its exit record
            shutil.rmtree(lost_dir, ignore_errors=True)
            if not lost_dir.exists():
                break
            await asyncio.sleep(0.05)
        assert not lost_dir.exists()
        second = ProcessRuntime(root_dir=root, pod_network="netns")
        second.add_node("node-0", "127.0.0.1", cidr)
        assert set(second.list_pods()) == {kept.metadata.uid}
        assert netns_name(lost.metadata.uid) not in netns_list() and not link_exists(veth_name(lost.metadata.uid))
        assert second.pod_status(kept.metadata.uid).sandbox.ip == ip_kept
        assert second.netns_path(kept.metadata.uid) is not None
        assert await fetch(f"http://{ip_kept}:{port}/") == f"kept {ip_kept}"
        await second.aclose()
    finally:
        kill_recorded(root)                   # containers, namespaces, veths, the bridge
    assert not {netns_name(kept.metadata.uid), netns_name(lost.metadata.uid)} & netns_list()
    assert not link_exists(bridge_name(root.resolve(), "node-0"))
    assert teardown_recorded(root) == 0


async def test_a_temporary_root_removes_everything_when_the_runtime_stops(tmp_path: pathlib.Path) -> None:
    require_netns()
    rt = ProcessRuntime(pod_network="netns")  # no root: its containers and network end with it
    rt.add_node("node-0", "127.0.0.1", free_cidr())
    pod = server_pod("tmp", free_port())
    await ready_ip(rt, pod)
    bridge = bridge_name(rt.root, "node-0")
    assert link_exists(bridge)
    await rt.stop_all()
    assert netns_name(pod.metadata.uid) not in netns_list() and not link_exists(bridge)


async def test_a_podcidr_in_use_on_the_machine_leaves_that_node_on_the_host(tmp_path: pathlib.Path) -> None:
    require_netns()
    cidr = free_cidr()
    other = PodNetwork("netns", lambda: tmp_path / "a")
    other.add_node("n", cidr)
    try:
        mine = PodNetwork("netns", lambda: tmp_path / "b")
        mine.add_node("n", cidr)
        assert other.covers("n") and not mine.covers("n")
        assert not link_exists(bridge_name(tmp_path / "b", "n"))
    finally:
        teardown_recorded(tmp_path / "a")


def test_auto_falls_back_to_the_host_network_once_and_says_why(tmp_path: pathlib.Path, monkeypatch: Any,
                                                                caplog: Any) -> None:
    from kubeplane.kubelet.network import NetworkError, pod_network
    monkeypatch.setattr(pod_network.os, "geteuid", lambda: 1000)
    net = PodNetwork("auto", lambda: tmp_path)
    with caplog.at_level("INFO", logger=pod_network.__name__):
        net.add_node("a", "10.9.8.0/24")
        net.add_node("b", "10.9.9.0/24")
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == ["Pod network: network namespaces are unavailable (not running as root): every pod shares "
                      "the host's network and its podIP is the host's (--pod-network=host)"]
    assert not net.covers("a") and not net.covers("b")
    with pytest.raises(NetworkError, match="--pod-network=netns: cannot create network namespaces: not running as root"):
        PodNetwork("netns", lambda: tmp_path).add_node("a", "10.9.8.0/24")


def test_probes_that_overlap_do_not_fail_each_other(monkeypatch: Any) -> None:
    """`up`'s kubelet and its cluster DNS (in a thread) both probe at start-up: a probe that
    starts while another's namespace exists gets a name of its own, not "File exists" (which
    put a node's pods on the host's network)."""
    from kubeplane.kubelet.network import ip as iproute
    from kubeplane.kubelet.network import pod_network
    monkeypatch.setattr(pod_network.os, "geteuid", lambda: 0)
    monkeypatch.setattr(pod_network.os.path, "exists", lambda path: True)
    live: set[str] = set()
    nested: list[str] = []

    def run(args: list[str], *, netns: str = "") -> str:
        verb, name = args[1], args[2]
        if verb == "add":
            if name in live:
                raise iproute.IPError(f'Cannot create namespace file "/run/netns/{name}": File exists')
            live.add(name)
            if len(live) == 1 and not nested:    # the other caller probes now, while this one's exists
                nested.append(pod_network.unavailable_reason())
        else:
            live.discard(name)
        return ""
    monkeypatch.setattr(iproute, "run", run)
    assert pod_network.unavailable_reason() == ""
    assert nested == [""] and not live


def test_up_refuses_pod_network_netns_where_namespaces_cannot_be_made(monkeypatch: Any) -> None:
    import argparse

    from kubeplane.cmd import up
    from kubeplane.cmd.errors import Fatal
    from kubeplane.kubelet.network import pod_network
    monkeypatch.setattr(pod_network.os, "geteuid", lambda: 1000)
    args = argparse.Namespace(runtime="process", nodes=1, pod_network="netns")
    with pytest.raises(Fatal, match="--pod-network=netns: cannot create network namespaces: not running as root"):
        up.check_pod_network(args)
    up.check_pod_network(argparse.Namespace(runtime="process", nodes=1, pod_network="auto"))   # falls back later


async def test_pods_of_two_nodes_reach_each_other_through_the_host(tmp_path: pathlib.Path) -> None:
    require_netns()
    rt = ProcessRuntime(root_dir=tmp_path / "kubelet", pod_network="netns")
    rt.add_node("node-0", "127.0.0.1", free_cidr())
    rt.add_node("node-1", "127.0.0.1", free_cidr())
    try:
        port = free_port()
        server = server_pod("far", port, nodeName="node-1")
        far_ip = await ready_ip(rt, server)
        check = [PY, "-c", f"import socket; socket.create_connection(({far_ip!r}, {port}), timeout=2)"]
        client = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", "import time; time.sleep(60)"],
                            "livenessProbe": {"exec": {"command": check}, "timeoutSeconds": 3}}],
                          uid=unique_uid("near"))
        near_ip = await ready_ip(rt, client)
        assert ipaddress.ip_address(near_ip) in ipaddress.ip_network(rt.network._nodes["node-0"].cidr)
        cid = rt.pod_status(client.metadata.uid).latest("c").id

        async def reached() -> bool:          # once the far server listens (running is not listening)
            return await rt.probe(cid, "liveness") == PROBE_SUCCESS
        await eventually(reached, 10, "the near pod to reach the far one")
    finally:
        await rt.stop_all()
        kill_recorded(tmp_path / "kubelet")


async def test_a_sandbox_left_half_made_is_made_again_with_its_address(tmp_path: pathlib.Path) -> None:
    require_netns()
    root, cidr = tmp_path / "kubelet", free_cidr()
    first = ProcessRuntime(root_dir=root, pod_network="netns")
    first.add_node("node-0", "127.0.0.1", cidr)
    pod = make_pod([], uid=unique_uid("half"))
    uid = pod.metadata.uid
    try:
        first.run_pod_sandbox(pod)
        ip = (await eventually(lambda: (s := first.pod_status(uid).sandbox).state == "Ready" and s, 10)).ip
        p = first._pods[uid]
        p.sandbox_ready = False               # as recorded before the namespace was done
        first._save_pod(p)
        await first.aclose()
        second = ProcessRuntime(root_dir=root, pod_network="netns")
        second.add_node("node-0", "127.0.0.1", cidr)
        assert second.restore_pod(pod) and second.pod_status(uid).sandbox is None   # the kubelet makes one
        second.run_pod_sandbox(pod)
        again = await eventually(lambda: (s := second.pod_status(uid).sandbox).state == "Ready" and s, 10)
        assert again.ip == ip and second.netns_path(uid) is not None
        await second.aclose()
    finally:
        kill_recorded(root)
    assert netns_name(uid) not in netns_list()


async def test_a_sandbox_stopped_while_its_network_is_made_never_becomes_ready(nrt: ProcessRuntime) -> None:
    pod = make_pod([], uid=unique_uid("stop"))
    uid = pod.metadata.uid
    nrt.run_pod_sandbox(pod)
    nrt.stop_pod_sandbox(uid)                 # before the namespace is done
    await eventually(lambda: not nrt._tasks, 10, "the setup to finish")
    assert nrt.pod_status(uid).sandbox.state == "NotReady"
    assert netns_name(uid) not in netns_list() and nrt.network.allocation(uid) is None


def test_a_bridge_that_cannot_be_made_leaves_the_node_on_the_host(tmp_path: pathlib.Path, monkeypatch: Any,
                                                                    caplog: Any) -> None:
    from kubeplane.kubelet.network import ip as iproute
    from kubeplane.kubelet.network import pod_network

    def fail(lines: list[str], **_: Any) -> None:
        raise iproute.IPError("RTNETLINK answers: Operation not permitted")
    monkeypatch.setattr(iproute, "run_batch", fail)
    monkeypatch.setattr(pod_network, "_cidr_user", lambda net, bridge: "")
    net = PodNetwork("netns", lambda: tmp_path)
    net._enabled = True                       # decided: namespaces can be made
    with caplog.at_level("ERROR", logger=pod_network.__name__):
        net.add_node("n", "10.9.8.0/24")
    assert not net.covers("n")
    assert "Operation not permitted: its pods share the host's network" in caplog.text


# --- the network namespace and the mounts together ------------------------------------------------

INSIDE = ("import os, time\n"
          "ns = [x for x in open('/etc/resolv.conf').read().splitlines() if x.startswith('nameserver')]\n"
          "print(os.readlink('/proc/self/ns/net'), *ns,\n"
          "      open('/data/k').read(), os.getcwd(), flush=True)\n"
          "time.sleep(60)\n")


async def test_a_pod_sees_its_network_namespace_resolv_conf_and_volumes_in_exec_and_probes(
        nrt: ProcessRuntime, tmp_path: pathlib.Path) -> None:
    """The shim enters the pod's network namespace, then the container's mounts (its volumes,
    and the pod's resolv.conf at /etc/resolv.conf); exec_preexec and exec probes do the same."""
    import subprocess

    from kubeplane.kubelet.network.dns import Configurer
    if os.geteuid() != 0:
        pytest.skip("mount namespaces need root")
    host_resolv = tmp_path / "host-resolv.conf"
    host_resolv.write_text("nameserver 192.0.2.53\n")
    nrt.dns_configurer = Configurer(None, None, [], ["10.96.0.10"], "cluster.local", str(host_resolv))
    (tmp_path / "vol").mkdir()
    (tmp_path / "vol" / "k").write_text("from-the-volume")
    c = {"name": "c", "image": "python:3", "command": [PY, "-c", INSIDE], "workingDir": "/data",
         "volumeMounts": [{"name": "v", "mountPath": "/data"}],
         "livenessProbe": {"exec": {"command": ["sh", "-c", "grep -q 10.96.0.10 /etc/resolv.conf && test -f k"]}}}
    pod = make_pod([c], name="both", uid=unique_uid("both"), dnsPolicy="ClusterFirst",
                   volumes=[{"name": "v", "hostPath": {"path": str(tmp_path / "vol")}}])
    uid = pod.metadata.uid
    await ready_ip(nrt, pod)
    netns_inode = f"net:[{os.stat(nrt.netns_path(uid)).st_ino}]"
    logs = await eventually(lambda: (out := (nrt.root / "pods" / uid / "logs" / "c").glob("*.log")) and
                            "".join(p.read_text() for p in out), 10, "the container's line")
    assert f"{netns_inode} nameserver 10.96.0.10 from-the-volume /data" in logs
    cid = nrt.pod_status(uid).latest("c").id
    hooks = [h["module"].rsplit("/", 2)[-2:] for h in nrt._by_id[cid.split("://")[-1]].hooks]
    assert hooks == [["network", "netns.py"], ["volumemanager", "mountns.py"]]      # the namespace first
    preexec = nrt.exec_preexec(cid)
    assert preexec is not None
    out = await asyncio.to_thread(subprocess.run, ["sh", "-c", "readlink /proc/self/ns/net; pwd; cat k; echo; "
                                                   "grep nameserver /etc/resolv.conf"],
                                  preexec_fn=preexec, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:4] == [netns_inode, "/data", "from-the-volume", "nameserver 10.96.0.10"]
    assert await nrt.probe(cid, "liveness") == PROBE_SUCCESS
    assert open("/etc/resolv.conf").read() != nrt.resolv_conf_path(uid).read_text()   # the host's is untouched


async def test_exec_preexec_without_mounts_enters_the_network_namespace_and_working_directory(
        nrt: ProcessRuntime) -> None:
    """Where mount namespaces cannot be made (so no /etc/hosts, no resolv.conf, no volumes
    mounted): no mount namespace, the network one all the same."""
    import subprocess
    nrt.pod_volumes.manager._can_mount = False
    pod = server_pod("netonly", free_port())
    await ready_ip(nrt, pod)
    cid = nrt.pod_status(pod.metadata.uid).latest("c").id
    assert [h["module"].rsplit("/", 1)[-1] for h in nrt._by_id[cid.split("://")[-1]].hooks] == ["netns.py"]
    preexec = nrt.exec_preexec(cid)
    assert preexec is not None
    out = await asyncio.to_thread(subprocess.run, ["sh", "-c", "readlink /proc/self/ns/net; pwd"],
                                  preexec_fn=preexec, capture_output=True, text=True, check=True)
    inode = os.stat(nrt.netns_path(pod.metadata.uid)).st_ino
    assert out.stdout.split() == [f"net:[{inode}]", str(nrt.root / "pods" / pod.metadata.uid / "work")]
