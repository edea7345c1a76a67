"""`kubeplane controller-manager` in a process of its own, over HTTPS, with leader election."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from .cluster import Cluster
from .cluster import eventually
from .test_replicaset import pods, replica_set


def test_standalone_controller_manager_takes_the_lease_and_runs_the_replicaset_controller() -> None:
    c = Cluster(extra_args=("--no-controllers",)).start()
    cm = subprocess.Popen([sys.executable, "-m", "kubeplane", "controller-manager", "--kubeconfig", str(c.kubeconfig),
                           "--secure-port", "0"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        lease = eventually(lambda: (lambda r: r.returncode == 0 and r.stdout)(
            c.kubectl("get", "lease", "kube-controller-manager", "-n", "kube-system", "-o", "json", check=False)),
            "the controller-manager to take its lease")
        assert '"holderIdentity"' in lease and '"leaseDurationSeconds": 15' in lease
        c.apply_yaml(replica_set("cm", 2, "default"))
        eventually(lambda: len(pods(c, "default", "app=cm")) == 2, "2 pods from the standalone controllers")
    finally:
        os.killpg(cm.pid, signal.SIGTERM)
        cm.wait(10)
        c.cleanup()
