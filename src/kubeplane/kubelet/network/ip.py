"""Running iproute2's `ip`: one process per batch of commands, in the host's network
namespace or a pod's.

    run(["link", "add", "kp0", "type", "bridge"])                  # raises IPError
    await arun_batch(["link set lo up", "route add default via 10.244.0.1"], netns="kp-<uid>")

Why `ip` and not pyroute2 (netlink from Python): measured with 100 network namespaces, each
with a veth pair on a bridge, an address, lo up and a default route (benchmarks/podnet_setup.py,
BENCHMARKS.md), the two are within the noise of each other (create 1.1-1.6 s vs 1.9-2.3 s,
delete 3.4-3.8 s vs 2.9-3.2 s: deleting is the kernel's netns teardown either way); with `ip`
a pod costs two short processes run off the event loop (asyncio subprocesses), pyroute2 would
cost a new dependency, ~115 ms of import, and blocking netlink calls on the event loop (or a
thread). `ip` is present wherever network namespaces are usable (iproute2), and what it does
is what an operator types to inspect the result.
"""
from __future__ import annotations

import asyncio
import shutil
import subprocess

IP = shutil.which("ip") or "/usr/sbin/ip"
TIMEOUT = 30.0          # seconds: a netlink request that takes longer is stuck


class IPError(Exception):
    """An `ip` command failed; its message is ip's own stderr."""


def _argv(args: list[str], netns: str, batch: bool, force: bool = False) -> list[str]:
    return [IP, *(["-n", netns] if netns else []), *(["-force"] if force else []),
            *(["-batch", "-"] if batch else args)]


def _check(argv: list[str], code: int | None, err: bytes) -> None:
    if code != 0:
        raise IPError(err.decode("utf-8", "replace").strip() or f"{' '.join(argv)}: exit code {code}")


def run(args: list[str], *, netns: str = "") -> str:
    """Run one `ip` command (blocking: for start-up and clean-up); its stdout."""
    argv = _argv(args, netns, False)
    try:
        res = subprocess.run(argv, capture_output=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise IPError(f"{' '.join(argv)}: {err}") from None
    _check(argv, res.returncode, res.stderr)
    return res.stdout.decode("utf-8", "replace")


def run_batch(lines: list[str], *, netns: str = "", force: bool = False) -> None:
    """`ip -batch`: the lines in order, stopping at the first that fails (force: every line
    runs); a failure raises."""
    argv = _argv([], netns, True, force)
    try:
        res = subprocess.run(argv, input="\n".join(lines).encode() + b"\n", capture_output=True,
                             timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise IPError(f"{' '.join(argv)}: {err}") from None
    _check(argv, res.returncode, res.stderr)


async def arun_batch(lines: list[str], *, netns: str = "", force: bool = False) -> None:
    """run_batch without blocking the event loop."""
    argv = _argv([], netns, True, force)
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.PIPE)
    except OSError as err:
        raise IPError(f"{' '.join(argv)}: {err}") from None
    try:
        _, stderr = await asyncio.wait_for(proc.communicate("\n".join(lines).encode() + b"\n"), TIMEOUT)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise IPError(f"{' '.join(argv)}: timed out after {TIMEOUT:g}s") from None
    _check(argv, proc.returncode, stderr)
