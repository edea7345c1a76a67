"""Real exec, httpGet and tcpSocket probes against a local process.

    result, output = await run_probe(probe, container, env=env, cwd=cwd)

Each returns (PROBE_SUCCESS or PROBE_FAILURE, output): output is what the Unhealthy event
says after "<Type> probe failed: ". timeoutSeconds (default 1) bounds each probe in real
time; a timed-out exec probe's process group is killed.

Upstream: pkg/kubelet/prober/prober.go (runProbe) and pkg/probe/{exec,http,tcp}.
"""
from __future__ import annotations

import asyncio
import os
import signal
import ssl
import subprocess
import urllib.parse
from collections.abc import Callable

from ....api.types import core_v1
from .. import PROBE_FAILURE, PROBE_SUCCESS
from .env import POD_IP, expand

MAX_OUTPUT = 10 * 1024          # bytes of probe output kept (upstream: maxReadLength)
USER_AGENT = "kube-probe/1.37"


async def run_probe(p: core_v1.Probe, c: core_v1.Container, *, env: dict[str, str], cwd: str,
                    pod_ip: str = POD_IP, preexec: Callable[[], None] | None = None) -> tuple[str, str]:
    """httpGet and tcpSocket target pod_ip unless they name a host; exec probes run inside the
    container where preexec puts them (its network namespace, mounts and working directory:
    ProcessRuntime.exec_preexec), else in cwd on the host. Upstream: prober.runProbe"""
    timeout = float(p.timeout_seconds or 1)
    if p.exec is not None:
        return await exec_probe([expand(a, env) for a in p.exec.command or []], env=env,
                                cwd=None if preexec is not None else cwd, timeout=timeout, preexec=preexec)
    if p.http_get is not None:
        g = p.http_get
        port = resolve_port(g.port, c)
        if port is None:
            return PROBE_FAILURE, f"unable to resolve port {g.port!r}"
        headers = [(h.name or "", h.value or "") for h in g.http_headers or ()]
        return await http_probe((g.scheme or "HTTP").upper(), g.host or pod_ip, port, g.path or "/", headers,
                                timeout=timeout)
    if p.tcp_socket is not None:
        port = resolve_port(p.tcp_socket.port, c)
        if port is None:
            return PROBE_FAILURE, f"unable to resolve port {p.tcp_socket.port!r}"
        return await tcp_probe(p.tcp_socket.host or pod_ip, port, timeout=timeout)
    return PROBE_FAILURE, "only exec, httpGet and tcpSocket probes are supported by the process runtime"


def resolve_port(port: int | str | None, c: core_v1.Container) -> int | None:
    """A number, or a named containerPort. Upstream: probe.ResolveContainerPort"""
    if isinstance(port, int):
        return port if 0 < port < 65536 else None
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for cp in c.ports or ():
        if cp.name == port:
            return cp.container_port
    return None


async def exec_probe(argv: list[str], *, env: dict[str, str], cwd: str | None, timeout: float,
                     preexec: Callable[[], None] | None = None) -> tuple[str, str]:
    """Exit code 0 -> success. Upstream: pkg/probe/exec"""
    if not argv:
        return PROBE_FAILURE, "exec probe has no command"
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                                                    env=env, cwd=cwd, start_new_session=True,
                                                    preexec_fn=preexec)
    except (OSError, subprocess.SubprocessError) as err:
        return PROBE_FAILURE, f"exec: {argv[0]!r}: {getattr(err, 'strerror', None) or err}"
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        return PROBE_FAILURE, f"command {argv!r} timed out"
    finally:
        if proc.returncode is None:
            _kill_group(proc.pid)
            await proc.wait()
    text = out[:MAX_OUTPUT].decode("utf-8", "replace")
    if proc.returncode == 0:
        return PROBE_SUCCESS, text
    return PROBE_FAILURE, text or f"command {argv!r} exited with {proc.returncode}"


async def http_probe(scheme: str, host: str, port: int, path: str, headers: list[tuple[str, str]], *,
                     timeout: float) -> tuple[str, str]:
    """2xx and 3xx -> success (redirects are not followed). Upstream: pkg/probe/http"""
    url = f"{scheme.lower()}://{host}:{port}{path if path.startswith('/') else '/' + path}"
    try:
        return await asyncio.wait_for(_http_get(scheme, host, port, url, headers), timeout)
    except asyncio.TimeoutError:
        return PROBE_FAILURE, f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    except OSError as err:
        return PROBE_FAILURE, f'Get "{url}": dial tcp {host}:{port}: connect: {_reason(err)}'


async def _http_get(scheme: str, host: str, port: int, url: str, headers: list[tuple[str, str]]) -> tuple[str, str]:
    ctx = None
    if scheme == "HTTPS":                 # upstream skips certificate verification for probes
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    reader, writer = await asyncio.open_connection(host, port, ssl=ctx)
    try:
        target = urllib.parse.urlsplit(url)
        names = {k.lower() for k, _ in headers}
        lines = [f"GET {target.path or '/'}{'?' + target.query if target.query else ''} HTTP/1.1"]
        if "host" not in names:
            lines.append(f"Host: {host}:{port}")
        if "user-agent" not in names:
            lines.append(f"User-Agent: {USER_AGENT}")
        if "accept" not in names:
            lines.append("Accept: */*")
        lines += [f"{k}: {v}" for k, v in headers] + ["Connection: close", "", ""]
        writer.write("\r\n".join(lines).encode("latin-1"))
        await writer.drain()
        status_line = await reader.readline()
        parts = status_line.split()
        if len(parts) < 2 or not parts[1].isdigit():
            return PROBE_FAILURE, f'Get "{url}": malformed HTTP response {status_line[:100]!r}'
        code = int(parts[1])
        if 200 <= code < 400:
            return PROBE_SUCCESS, ""
        return PROBE_FAILURE, f"HTTP probe failed with statuscode: {code}"
    finally:
        writer.close()


async def tcp_probe(host: str, port: int, *, timeout: float) -> tuple[str, str]:
    """A completed TCP handshake -> success. Upstream: pkg/probe/tcp"""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except asyncio.TimeoutError:
        return PROBE_FAILURE, f"dial tcp {host}:{port}: i/o timeout"
    except OSError as err:
        return PROBE_FAILURE, f"dial tcp {host}:{port}: connect: {_reason(err)}"
    writer.close()
    return PROBE_SUCCESS, ""


def _reason(err: OSError) -> str:
    return (os.strerror(err.errno) if err.errno else str(err)).lower()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
