"""DaemonSets with the real kubectl: one pod per node, following nodes added (a second
`kubeplane kubelet` process joins the cluster) and tainted (`kubectl taint`), and
`kubectl rollout status/restart/history/undo ds/...` as upstream."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
from typing import Any, Iterator

import pytest

from .cluster import Cluster, eventually, running

DS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
      "spec": {"selector": {"matchLabels": {"app": "agent"}},
               "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
               "template": {"metadata": {"labels": {"app": "agent"}},
                            "spec": {"containers": [{"name": "agent", "image": "agent:v1"}]}}}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running(nodes=2)


def pods_by_node(c: Cluster) -> dict[str, str]:
    """node -> image of the agent pods that are not being deleted."""
    items = c.get_json("pods", "-l", "app=agent")["items"]
    return {p["spec"].get("nodeName", ""): p["spec"]["containers"][0]["image"] for p in items
            if not p["metadata"].get("deletionTimestamp")}


def rollout_status(c: Cluster) -> subprocess.CompletedProcess[str]:
    return c.kubectl("rollout", "status", "ds/agent", "--timeout=60s", timeout=90)


def test_daemonset_follows_nodes_and_taints(cluster: Cluster, tmp_path: pathlib.Path) -> None:
    c = cluster
    c.apply_yaml(DS)
    out = rollout_status(c).stdout
    assert 'daemon set "agent" successfully rolled out' in out, out
    assert sorted(pods_by_node(c)) == ["kubeplane-node-0", "kubeplane-node-1"]
    ds = c.get_json("ds", "agent")
    st = ds["status"]
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberReady"], st["numberAvailable"],
            st["updatedNumberScheduled"], st["observedGeneration"]) == (2, 2, 2, 2, 2, 1)

    # A node joins: a kubelet of its own, in another process.
    log = open(tmp_path / "kubelet.log", "ab")
    kubelet = subprocess.Popen([sys.executable, "-m", "kubeplane", "kubelet", "--kubeconfig", str(c.kubeconfig),
                                "--nodes", "1", "--node-prefix", "extra-", "--port", "0"],
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        eventually(lambda: "extra-0" in pods_by_node(c), "a daemon pod on the new node", timeout=60)
        eventually(lambda: c.get_json("ds", "agent")["status"].get("numberAvailable") == 3, "3 available", timeout=60)

        # A NoExecute taint the pod does not tolerate: its pod goes; NoSchedule alone would let it stay.
        c.kubectl("taint", "nodes", "extra-0", "dedicated=infra:NoSchedule")
        assert "extra-0" in pods_by_node(c)
        c.kubectl("taint", "nodes", "extra-0", "evict=now:NoExecute")
        eventually(lambda: "extra-0" not in pods_by_node(c), "the pod leaves the tainted node", timeout=60)
        eventually(lambda: c.get_json("ds", "agent")["status"].get("desiredNumberScheduled") == 2, "2 desired")
        c.kubectl("taint", "nodes", "extra-0", "evict-", "dedicated-")
        eventually(lambda: "extra-0" in pods_by_node(c), "the pod comes back once untainted", timeout=60)
    finally:
        os.killpg(kubelet.pid, signal.SIGTERM)
        kubelet.wait(20)
        log.close()
    # The node goes; its pod would be the pod garbage collector's (orphaned pods are force-deleted).
    c.kubectl("delete", "node", "extra-0")
    for p in c.get_json("pods", "-l", "app=agent", "--field-selector", "spec.nodeName=extra-0")["items"]:
        c.kubectl("delete", "pod", p["metadata"]["name"], "--force", "--grace-period=0")


def test_rollout_restart_history_undo(cluster: Cluster) -> None:
    c = cluster
    c.apply_yaml(DS)
    rollout_status(c)
    c.kubectl("set", "image", "ds/agent", "agent=agent:v2")
    out = rollout_status(c).stdout
    assert 'daemon set "agent" successfully rolled out' in out, out
    eventually(lambda: set(pods_by_node(c).values()) == {"agent:v2"}, "every pod on v2", timeout=60)

    history = c.kubectl("rollout", "history", "ds/agent").stdout
    assert "REVISION" in history and "1 " in history and "2 " in history, history
    rev1 = c.kubectl("rollout", "history", "ds/agent", "--revision=1").stdout
    assert "agent:v1" in rev1, rev1

    out = c.kubectl("rollout", "undo", "ds/agent").stdout
    assert "daemonset.apps/agent rolled back" in out, out
    rollout_status(c)
    eventually(lambda: set(pods_by_node(c).values()) == {"agent:v1"}, "every pod back on v1", timeout=60)
    revs = sorted(r["revision"] for r in c.get_json("controllerrevisions", "-l", "app=agent")["items"])
    assert revs == [2, 3], revs                     # the v1 revision renumbered, no new one
    # undo to the revision already running: kubectl finds the bytes equal and writes nothing
    generation = c.get_json("ds", "agent")["metadata"]["generation"]
    out = c.kubectl("rollout", "undo", "ds/agent", "--to-revision=3").stdout
    assert out == "daemonset.apps/agent skipped rollback (current template already matches revision 3)\n", out
    assert c.get_json("ds", "agent")["metadata"]["generation"] == generation
    missing = c.kubectl("rollout", "undo", "ds/agent", "--to-revision=9", check=False)
    assert missing.returncode == 1 and missing.stderr.endswith("\nerror: unable to find specified revision 9 in history\n")

    before = {p["metadata"]["name"] for p in c.get_json("pods", "-l", "app=agent")["items"]}
    c.kubectl("rollout", "restart", "ds/agent")
    rollout_status(c)
    after: Any = eventually(lambda: (names := {p["metadata"]["name"] for p in c.get_json("pods", "-l", "app=agent")[
        "items"] if not p["metadata"].get("deletionTimestamp")}) and not (names & before) and names,
        "every pod replaced", timeout=60)
    assert len(after) == 2
