"""`kubeplane reset`: refuses while `up` runs, stops the process containers a stopped `up` left
running, deletes the data dir, and deletes nothing that is not a data dir."""
from __future__ import annotations

import pathlib
import signal
import subprocess
import sys

from .cluster import Cluster, eventually
from .test_process_runtime import PY, container_processes, deployment, pods

KUBEPLANE = [sys.executable, "-m", "kubeplane"]


def reset(data_dir: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KUBEPLANE, "reset", "--data-dir", str(data_dir)], capture_output=True, text=True,
                          timeout=60)


def test_reset_refuses_while_up_runs_then_stops_containers_and_deletes() -> None:
    c = Cluster(nodes=1, extra_args=("--runtime", "process")).start()
    data_dir = c.data_dir
    try:
        c.apply_yaml(deployment("sleeper", {"name": "sleeper", "image": "python:3",
                                            "command": [PY, "-c", "import time; time.sleep(3600)"]}))
        eventually(lambda: any(p["status"].get("phase") == "Running" for p in pods(c, "sleeper")), "a Running pod")
        running = reset(data_dir)
        assert running.returncode == 1 and running.stdout == ""
        assert f"is in use by another kubeplane up (stop it first) (pid {c.proc.pid}" in running.stderr  # type: ignore[union-attr]
        assert (data_dir / "state.db").exists() and c.kubectl("get", "--raw", "/readyz").stdout == "ok"

        c.stop(signal.SIGKILL)
        assert len(container_processes(c)) == 1                     # it outlives `up`, on purpose
        done = reset(data_dir)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"deleted {data_dir.resolve()}, stopped 1 container"
        assert not data_dir.exists()
    finally:
        c.cleanup()


def test_reset_deletes_nothing_else(tmp_path: pathlib.Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    res = reset(tmp_path)
    assert res.returncode == 1 and "is not a kubeplane data dir" in res.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"
    missing = reset(tmp_path / "missing")
    assert missing.returncode == 0 and missing.stdout.startswith("nothing to reset")
