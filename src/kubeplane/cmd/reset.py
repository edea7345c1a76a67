"""`kubeplane reset`: stop what a stopped `up` left running and delete its data dir.

    kubeplane reset                      # ./.kubeplane
    kubeplane reset --data-dir DIR

A fresh start is `up` on an empty data dir; reset makes one safely:
1. it refuses while an `up` runs on the data dir (the line names its PID and port, from the
   data-dir lock), so a serving control plane is never deleted under its feet;
2. it stops the containers of `--runtime process` pods, which outlive `up` on purpose (a
   restart of `up` is invisible to them, as a kubelet restart is upstream);
3. it deletes the data dir — only one that holds what `up` writes there, so a mistyped
   `--data-dir` cannot remove anything else.

Upstream: `kubeadm reset` (undo what init/join did on a node) and k3s-killall.sh (stop the
containers k3s leaves running).
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import sys
from typing import Any

from .datadir import OWNED, DataDirLock
from .errors import Fatal, describe


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "reset", help="stop what a stopped `up` left running (process containers) and delete its data dir")
    p.add_argument("--data-dir", type=pathlib.Path, default=pathlib.Path(".kubeplane"),
                   help="the data dir of the `up` to reset (default ./.kubeplane)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        print(reset(args.data_dir.resolve()))
    except Fatal as err:
        print(f"Error: {err}", file=sys.stderr, flush=True)
        return 1
    return 0


def reset(data_dir: pathlib.Path) -> str:
    """Steps 1-3 of the module docstring; what was done, as one line."""
    if not data_dir.exists():
        return f"nothing to reset: {data_dir} does not exist"
    if not data_dir.is_dir() or not any((data_dir / name).exists() for name in OWNED):
        raise Fatal(f"{data_dir} is not a kubeplane data dir (it holds none of {', '.join(OWNED)})")
    lock = DataDirLock.acquire(data_dir, holder="kubeplane up (stop it first)")
    try:
        from ..kubelet.runtime.process.records import kill_recorded
        stopped = kill_recorded(data_dir / "kubelet") if (data_dir / "kubelet").is_dir() else 0
        try:
            shutil.rmtree(data_dir)
        except OSError as err:
            raise Fatal(f"cannot delete {data_dir}: {describe(err)}") from None
    finally:
        lock.release()
    containers = f", stopped {stopped} container{'s' * (stopped != 1)}" if stopped else ""
    return f"deleted {data_dir}{containers}"

