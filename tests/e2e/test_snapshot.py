"""`kubeplane snapshot save/restore/migrate` on a real `up`: a consistent online copy, a restore
that brings back what the copy held (Secrets still sealed with the data dir's key), and a move
of the whole store into a real etcd that `up --storage etcd` then serves."""
from __future__ import annotations

import base64
import pathlib
import subprocess
import sys

import pytest

from kubeplane.testing.etcd import EtcdCluster, etcd_binary
from .cluster import Cluster


def snapshot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubeplane", "snapshot", *args], capture_output=True, text=True,
                          timeout=120)


def test_save_while_up_runs_then_restore_what_it_held(tmp_path: pathlib.Path) -> None:
    data, snap = tmp_path / "data", tmp_path / "snap.db"
    c = Cluster(data).start()
    try:
        c.kubectl("create", "configmap", "kept", "--from-literal=a=1")
        c.kubectl("create", "secret", "generic", "sealed", "--from-literal=password=hunter2")
        saved = snapshot("save", str(snap), "--data-dir", str(data))       # up is running
        assert saved.returncode == 0 and "saved" in saved.stdout, saved.stderr
        assert snap.stat().st_mode & 0o777 == 0o600
        assert b"hunter2" not in snap.read_bytes()                          # sealed in the copy too
        c.kubectl("delete", "configmap", "kept")
        c.kubectl("create", "configmap", "later")
        refused = snapshot("restore", str(snap), "--data-dir", str(data))
        assert refused.returncode == 1 and "stop it first" in refused.stderr
        c.stop()
        restored = snapshot("restore", str(snap), "--data-dir", str(data))
        assert restored.returncode == 0, restored.stderr
        c.start()
        names = c.kubectl("get", "configmaps", "-o", "name").stdout.split()
        assert "configmap/kept" in names and "configmap/later" not in names
        secret = c.get_json("secret", "sealed")
        assert base64.b64decode(secret["data"]["password"]) == b"hunter2"
    finally:
        c.cleanup()


def test_restore_refuses_what_is_not_a_snapshot(tmp_path: pathlib.Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    res = snapshot("restore", str(junk), "--data-dir", str(tmp_path / "data"))
    assert res.returncode == 1 and "is not a kubeplane snapshot" in res.stderr
    assert not (tmp_path / "data" / "state.db").exists()
    missing = snapshot("save", str(tmp_path / "x.db"), "--data-dir", str(tmp_path / "nowhere"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr


@pytest.mark.skipif(etcd_binary() is None, reason="no etcd binary (apt-get install etcd-server)")
def test_migrate_a_data_dir_into_etcd(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    c = Cluster(data).start()
    try:
        c.kubectl("create", "deployment", "web", "--image=nginx")
        c.kubectl("create", "secret", "generic", "sealed", "--from-literal=password=hunter2")
        uid = c.get_json("deployment", "web")["metadata"]["uid"]
        c.stop()
        with EtcdCluster(tmp_path / "etcd") as etcd:
            cfg = etcd.config()
            flags = ["--etcd-servers", ",".join(cfg.servers), f"--etcd-cafile={cfg.cafile}",
                     f"--etcd-certfile={cfg.certfile}", f"--etcd-keyfile={cfg.keyfile}"]
            moved = snapshot("migrate", "--data-dir", str(data), *flags)
            assert moved.returncode == 0 and "copied" in moved.stdout, moved.stderr
            again = snapshot("migrate", "--data-dir", str(data), *flags)
            assert again.returncode == 1 and "already holds objects" in again.stderr
            on_etcd = Cluster(data, etcd=cfg).start()
            try:
                assert on_etcd.get_json("deployment", "web")["metadata"]["uid"] == uid
                secret = on_etcd.get_json("secret", "sealed")
                assert base64.b64decode(secret["data"]["password"]) == b"hunter2"
            finally:
                on_etcd.stop()
    finally:
        c.cleanup()
