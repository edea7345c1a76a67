"""exec round-trip latency and port-forward throughput through `kubeplane up --runtime process`.

Run: .venv/bin/python benchmarks/streaming_bench.py [--execs 50] [--echoes 500] [--megabytes 64]

One node, one pod running `python -m http.server` over a directory holding a file of
--megabytes. Measured from a client in this process speaking the protocols itself (TLS to the
API server with the admin's token, WebSocket v5.channel.k8s.io; kubelet/streaming/wsstream.py
masks as a client does), so kubectl's start-up is not in the figures:
- exec: a whole `exec true` per iteration (connect, TLS, upgrade, spawn, exit status) — p50/p99;
- echo: one byte through an open `exec cat` session and back (stdin -> cat -> stdout) — p50/p99;
- port-forward: real `kubectl port-forward` (SPDY/3.1 tunnelled in a WebSocket, its default, and
  the SPDY fallback), the file downloaded through it with urllib — MB/s.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import os
import pathlib
import re
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import orjson
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from api_bench import start_up, stop

from kubeplane.kubelet.runtime.process.records import kill_recorded
from kubeplane.kubelet.streaming.wsstream import WebSocket, accept_key
from kubeplane.utils.duplex import open_connection

KUBECTL = str(pathlib.Path(sys.executable).parent / "kubectl")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Api:
    def __init__(self, kubeconfig: pathlib.Path) -> None:
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        m = re.match(r"https://([^:/]+):(\d+)", cluster["server"])
        assert m
        self.host, self.port = m.group(1), int(m.group(2))
        self.ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        self.token = cfg["users"][0]["user"]["token"]

    async def exec(self, pod: str, *command: str, stdin: bool = False) -> WebSocket:
        conn = await open_connection(self.host, self.port, ssl=self.ctx)
        key = base64.b64encode(os.urandom(16)).decode()
        query = "&".join(f"command={c}" for c in command) + "&stdout=true" + ("&stdin=true" if stdin else "")
        conn.write((f"GET /api/v1/namespaces/default/pods/{pod}/exec?{query} HTTP/1.1\r\nHost: {self.host}\r\n"
                    f"Authorization: Bearer {self.token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                    f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n"
                    f"Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = await conn.read()
            if not chunk:
                raise RuntimeError(f"closed: {head!r}")
            head += chunk
        head, _, rest = head.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101") and accept_key(key).encode() in head, head
        conn.unread(rest)
        return WebSocket(conn, client=True)


async def exec_latency(api: Api, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        ws = await api.exec("srv", "true")
        while (msg := await ws.receive()) is not None:
            if msg[1][:1] == b"\x03":
                assert orjson.loads(msg[1][1:])["status"] == "Success"
        out.append(time.perf_counter() - t0)
    return out


async def echo_latency(api: Api, n: int) -> list[float]:
    ws = await api.exec("srv", "cat", stdin=True)
    assert await ws.receive() == (2, b"\x01")                 # ready
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await ws.send(b"\x00x")
        msg = await ws.receive()
        assert msg is not None and msg[1] == b"\x01x"
        out.append(time.perf_counter() - t0)
    await ws.send(bytes([255, 0]))
    while await ws.receive() is not None:
        pass
    return out


def forward_throughput(kubeconfig: pathlib.Path, port: int, size: int, spdy: bool) -> float:
    env = {**os.environ, "KUBECTL_KUBERC": "false"}
    if spdy:
        env["KUBECTL_PORT_FORWARD_WEBSOCKETS"] = "false"
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", str(kubeconfig), "port-forward", "srv", f":{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        assert proc.stdout is not None
        m = re.search(rb"127\.0\.0\.1:(\d+)", proc.stdout.readline())
        assert m
        url = f"http://127.0.0.1:{int(m.group(1))}/big.bin"
        urllib.request.urlopen(url, timeout=60).read(1 << 20)          # warm: the session is up
        t0 = time.perf_counter()
        got = len(urllib.request.urlopen(url, timeout=120).read())
        elapsed = time.perf_counter() - t0
        assert got == size
        return got / elapsed / 1e6
    finally:
        proc.terminate()
        proc.wait(10)


def pct(xs: list[float], p: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--execs", type=int, default=50)
    ap.add_argument("--echoes", type=int, default=500)
    ap.add_argument("--megabytes", type=int, default=64)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="streaming-bench-") as tmp:
        data = pathlib.Path(tmp)
        work = data / "www"
        work.mkdir()
        size = args.megabytes << 20
        (work / "big.bin").write_bytes(os.urandom(size))
        proc, _ = start_up(data, "sqlite", ["--nodes", "1", "--runtime", "process"])
        try:
            kubeconfig = data / "kubeconfig"
            port = free_port()
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "srv"}, "spec": {
                "terminationGracePeriodSeconds": 1, "containers": [{
                    "name": "app", "image": "python", "workingDir": str(work),
                    "command": [sys.executable, "-m", "http.server", str(port)],
                    "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1}}]}}
            kc = [KUBECTL, "--kubeconfig", str(kubeconfig)]
            subprocess.run([*kc, "apply", "-f", "-"], input=orjson.dumps(pod), check=True, capture_output=True)
            subprocess.run([*kc, "wait", "--for=condition=Ready", "pod/srv", "--timeout=60s"], check=True,
                           capture_output=True)
            api = Api(kubeconfig)
            execs = asyncio.run(exec_latency(api, args.execs))
            echoes = asyncio.run(echo_latency(api, args.echoes))
            print(f"exec true (whole session): p50 {pct(execs, .5):.1f} ms  p99 {pct(execs, .99):.1f} ms  "
                  f"({args.execs} runs)")
            print(f"stdin->stdout echo in a session: p50 {pct(echoes, .5):.2f} ms  p99 {pct(echoes, .99):.2f} ms  "
                  f"mean {statistics.mean(echoes) * 1000:.2f} ms  ({args.echoes} round trips)")
            for spdy in (False, True):
                mbps = forward_throughput(kubeconfig, port, size, spdy)
                how = "SPDY (fallback)" if spdy else "SPDY in WebSocket (default)"
                print(f"kubectl port-forward, {how}: {mbps:.0f} MB/s ({args.megabytes} MiB)")
        finally:
            stop(proc)
            kill_recorded(data / "kubelet")          # process containers outlive `up` on purpose


if __name__ == "__main__":
    main()
