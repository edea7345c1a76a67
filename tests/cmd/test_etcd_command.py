"""`kubeplane etcd`: a real cluster on loopback that `up --storage etcd` can use, stopped by Ctrl-C."""
from __future__ import annotations

import asyncio
import pathlib
import signal
import subprocess
import sys

import pytest

from kubeplane.storage.etcd import EtcdConfig, EtcdStorage
from kubeplane.testing.etcd import etcd_binary

pytestmark = pytest.mark.skipif(etcd_binary() is None, reason="no etcd binary (apt-get install etcd-server)")


def flag(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def test_the_printed_flags_reach_the_cluster_and_ctrl_c_stops_it(tmp_path: pathlib.Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "kubeplane", "etcd", "--data-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("etcd is ready (1 member): kubeplane up --storage etcd --etcd-servers https://"), line
        words = line.split()
        config = EtcdConfig(flag(words, "--etcd-servers").split(","), cafile=flag(words, "--etcd-cafile"),
                            certfile=flag(words, "--etcd-certfile"), keyfile=flag(words, "--etcd-keyfile"))

        async def use() -> None:
            s = EtcdStorage(config)
            await s.start()
            kv = await s.create("/registry/configmaps/default/a", {"metadata": {"name": "a"}})
            assert (await s.get(kv.key)) == kv
            await s.close()
        asyncio.run(use())
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    members = subprocess.run(["pgrep", "-f", f"data-dir {tmp_path}"], capture_output=True, text=True).stdout
    assert members == ""                                 # no member left running
