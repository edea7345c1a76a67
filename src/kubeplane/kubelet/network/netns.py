"""Entering a pod's network namespace from a child between fork and exec.

    enter({"path": "/run/netns/kp-<uid>"})      # setns(2) with CLONE_NEWNET

The shim runs it as the first of a container's launch hooks (shim.Hooks loads this file by
path, since the shim imports nothing of kubeplane), before the mounts (volumemanager/mountns.py:
a chroot there would hide /run/netns); exec and exec probes run it as part of their preexec_fn
(ProcessRuntime.exec_preexec). So: the standard library only, and libc loaded here, at import
(a dlopen between fork and exec could deadlock on a lock another thread held at the fork).
os.setns is Python 3.12.

Upstream: what runc does for a container joining its sandbox's network namespace (the OCI
spec's linux.namespaces entry {"type": "network", "path": ...}: nsenter's setns).
"""
from __future__ import annotations

import ctypes
import os
from typing import Any

CLONE_NEWNET = 0x40000000

_libc: Any = ctypes.CDLL(None, use_errno=True)


def enter(args: dict[str, Any]) -> None:
    """Move the calling thread (a child about to exec) into the namespace at args["path"]."""
    path = args["path"]
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


async def socket_in(path: str, family: int) -> Any:
    """A TCP socket of the network namespace at path, non-blocking, for the event loop to
    connect (a socket belongs to the namespace it is made in, whatever thread uses it later):
    made on a thread of its own that enters the namespace and ends, so no thread of the
    process is left in it. Port-forward dials the pod's localhost this way, as containerd
    does (sandbox_portforward_linux.go: netNS.Do, then net.Dial to localhost)."""
    import asyncio
    import socket
    import threading
    loop = asyncio.get_running_loop()
    done: asyncio.Future[socket.socket] = loop.create_future()

    def fail(err: OSError) -> None:
        if not done.done():
            done.set_exception(err)

    def hand_over(sock: socket.socket) -> None:
        if done.done():                  # the dial was cancelled meanwhile
            sock.close()
        else:
            done.set_result(sock)

    def make() -> None:
        try:
            enter({"path": path})
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setblocking(False)
        except OSError as err:
            loop.call_soon_threadsafe(fail, err)
            return
        loop.call_soon_threadsafe(hand_over, sock)
    threading.Thread(target=make, name="netns-socket", daemon=True).start()
    return await done
