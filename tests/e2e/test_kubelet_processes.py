"""`kubeplane up --kubelet-processes 1`: the nodes' kubelets in a process of their own, reaching
the API server over HTTPS as each node, started, restarted and stopped with `up`; likewise the
scheduler with --scheduler-process."""
from __future__ import annotations

import os
import signal

from .cluster import Cluster, eventually


def children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def kubelet_processes(up_pid: int, command: bytes = b"kubelet") -> list[int]:
    """up's children running `kubeplane <command>`."""
    found = []
    for pid in children(up_pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"kubeplane.cmd.up_children\0" + command + b"\0" in f.read():
                    found.append(pid)
        except FileNotFoundError:
            pass
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def ready_nodes(c: Cluster) -> list[str]:
    nodes = c.get_json("nodes")["items"]
    return sorted(n["metadata"]["name"] for n in nodes
                  if any(x["type"] == "Ready" and x["status"] == "True" for x in n["status"].get("conditions", [])))


def test_a_deployment_runs_on_kubelets_in_a_second_process_restarted_and_stopped_with_up() -> None:
    c = Cluster(nodes=3, extra_args=("--kubelet-processes", "1", "--scheduler-process")).start()
    try:
        assert c.proc is not None
        up_pid = c.proc.pid
        child = eventually(lambda: kubelet_processes(up_pid), "the kubelet process")[0]
        scheduler = eventually(lambda: kubelet_processes(up_pid, b"scheduler"), "the scheduler process")[0]
        eventually(lambda: ready_nodes(c) == [f"kubeplane-node-{i}" for i in range(3)], "3 Ready nodes")
        # each node's Lease is renewed by that node, over HTTPS with its own certificate
        leases = eventually(lambda: (items := c.get_json("leases", "-n", "kube-node-lease")["items"])
                            and len(items) == 3 and items, "3 node Leases")
        assert sorted(x["spec"]["holderIdentity"] for x in leases) == [f"kubeplane-node-{i}" for i in range(3)]
        for i in range(3):          # issued by `up` (kubeadm's kubelet.conf), not requested by CSR
            assert (c.data_dir / "kubelet" / "pki" / f"kubeplane-node-{i}" / "kubelet-client-current.pem").exists()
        assert "items: []" in c.kubectl("get", "csr", "-o", "yaml").stdout

        c.kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=6")
        c.kubectl("rollout", "status", "deployment/web", "--timeout=60s", timeout=70)
        pods = c.get_json("pods", "-l", "app=web")["items"]
        assert len(pods) == 6 and all(p["status"]["phase"] == "Running" for p in pods)
        assert {p["spec"]["nodeName"] for p in pods} <= {f"kubeplane-node-{i}" for i in range(3)}

        # a kubelet process that dies is started again, and its nodes carry on
        os.kill(child, signal.SIGKILL)
        again = eventually(lambda: [p for p in kubelet_processes(up_pid) if p != child], "a new kubelet process")[0]
        c.kubectl("scale", "deployment/web", "--replicas=8")
        c.kubectl("rollout", "status", "deployment/web", "--timeout=60s", timeout=70)
        eventually(lambda: c.kubectl("get", "--raw", "/readyz").returncode == 0, "/readyz after the restart")
        log = c.log_path.read_text()
        assert "kubelet process ended (killed by SIGKILL)" in log

        c.stop()                       # SIGTERM: up stops its kubelet process first
        assert not alive(again) and not alive(scheduler)
        assert "Stopped" in c.log_path.read_text()
    finally:
        c.cleanup()


def test_no_kubelet_process_outlives_a_killed_up() -> None:
    c = Cluster(nodes=2, extra_args=("--kubelet-processes", "2")).start()
    try:
        assert c.proc is not None
        up_pid = c.proc.pid
        kids = eventually(lambda: (k := kubelet_processes(up_pid)) and len(k) == 2 and k, "two kubelet processes")
        eventually(lambda: len(ready_nodes(c)) == 2, "2 Ready nodes")
        os.kill(up_pid, signal.SIGKILL)          # not the process group: only `up` dies
        c.proc.wait(10)
        eventually(lambda: not any(alive(k) for k in kids), "the kubelet processes to end", timeout=15)
    finally:
        c.cleanup()


def test_more_than_one_kubelet_process_needs_the_sim_runtime() -> None:
    c = Cluster(nodes=1, extra_args=("--runtime", "process", "--kubelet-processes", "2"))
    try:
        c.start()
        raise AssertionError("up started")
    except RuntimeError as err:
        assert "--kubelet-processes above 1 needs --runtime sim" in str(err)
    finally:
        c.cleanup()
