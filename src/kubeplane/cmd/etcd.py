"""`kubeplane etcd`: a real etcd cluster on this machine's loopback, to try kubeplane on etcd.

    kubeplane etcd --members 3                 # runs until Ctrl-C; prints the flags for `up`
    kubeplane up --storage etcd --etcd-servers https://127.0.0.1:...,... --etcd-cafile ...

Members m0..m{n-1} listen on free loopback ports, each with its data dir under
DIR/etcd/m<i> and TLS everywhere (a CA, a certificate per member, a client certificate for the
API servers, under DIR/etcd/pki). The etcd binary is the system's (Debian: etcd-server).
"""
from __future__ import annotations

import argparse
import pathlib
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:                        # loaded by `kubeplane etcd` only, not by every command
    from ..testing.etcd import EtcdCluster


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "etcd", help="run a real etcd cluster (1 or 3 members, TLS) on loopback for `up --storage etcd`")
    p.add_argument("--members", type=int, choices=(1, 3, 5), default=1, help="cluster size (default 1)")
    p.add_argument("--data-dir", type=pathlib.Path, default=pathlib.Path(".kubeplane-etcd"),
                   help="where the members keep their data and certificates (default ./.kubeplane-etcd)")
    p.set_defaults(func=run)


def up_flags(cluster: EtcdCluster) -> str:
    """The `kubeplane up` flags that use this cluster."""
    cfg = cluster.config()
    return (f"--storage etcd --etcd-servers {','.join(cfg.servers)} --etcd-cafile {cfg.cafile} "
            f"--etcd-certfile {cfg.certfile} --etcd-keyfile {cfg.keyfile}")


def run(args: argparse.Namespace) -> int:
    from ..testing.etcd import EtcdCluster, etcd_binary
    if etcd_binary() is None:
        print("Error: no etcd binary on PATH (Debian/Ubuntu: apt-get install etcd-server)", file=sys.stderr)
        return 1
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with EtcdCluster(args.data_dir.resolve() / "etcd", members=args.members) as cluster:
        print(f"etcd is ready ({args.members} member{'s' if args.members > 1 else ''}): "
              f"kubeplane up {up_flags(cluster)}", flush=True)
        stop.wait()
    return 0
