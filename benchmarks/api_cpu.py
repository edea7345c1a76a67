"""The API server's CPU per HTTPS request: µs of `kubeplane up`'s CPU per GET and per pod create.

Run:  .venv/bin/python benchmarks/api_cpu.py [--gets 20000] [--creates 4000] [--watched 4000] [--runs 3]

Throughput on a shared machine swings with the neighbours' load; the server's own CPU time per
request (utime + stime of all its threads, from /proc) swings much less, so it is the figure to
compare two versions with. To compare with another checkout, run this script with
PYTHONPATH=<that checkout>/src, alternating with a run without (`kubeplane up` is started with
the same interpreter and environment). Each run starts `up --nodes 0 --no-controllers` on
SQLite, warms up with 2,000 GETs, then times `--gets` GETs of a namespace and `--creates` pod
creates from 16 concurrent aiohttp connections (benchmarks/api_bench.py's client). The create
figure is also given for the event loop's thread alone (the rest is SQLite's committer thread).
Then `--watched` ConfigMap creates while 10 watchers stream them (api_bench.py's watch phase):
the server's CPU per create, its fan-out to the 10 watch streams included, until every
watcher has seen every event.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import random
import statistics
import sys
import subprocess
import tempfile
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import aiohttp
import api_bench

WORKERS = 16


def cpu_seconds(pid: int, *, loop_only: bool = False) -> float:
    """CPU seconds of the process (all its threads), or of its main thread (the event loop) alone."""
    total = 0
    for tid in [str(pid)] if loop_only else os.listdir(f"/proc/{pid}/task"):
        fields = pathlib.Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


PY_SPY = os.environ.get("API_CPU_PY_SPY")      # a file: py-spy of `up` during the create phase (raw)


def threads(pid: int) -> dict[str, tuple[float, float, int, int]]:
    """Per thread of pid (by name): utime s, stime s, voluntary and involuntary context switches."""
    out: dict[str, tuple[float, float, int, int]] = {}
    tck = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = pathlib.Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            status = pathlib.Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except FileNotFoundError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")] + ("(loop)" if tid == str(pid) else "")
        f = stat.rsplit(")", 1)[1].split()
        sw = {k: int(v) for k, v in (ln.split(":") for ln in status.splitlines() if "ctxt_switches" in ln)}
        prev = out.get(name, (0.0, 0.0, 0, 0))
        out[name] = (prev[0] + int(f[11]) / tck, prev[1] + int(f[12]) / tck,
                     prev[2] + sw["voluntary_ctxt_switches"], prev[3] + sw["nonvoluntary_ctxt_switches"])
    return out


def _py_spy(pid: int) -> subprocess.Popen | None:
    if not PY_SPY:
        return None
    spy = subprocess.Popen([str(pathlib.Path(sys.executable).parent / "py-spy"), "record", "-r", "200", "--format",
                            "raw", "-o", PY_SPY, "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return spy


def _stop(spy: subprocess.Popen | None) -> None:
    if spy is not None:
        spy.send_signal(2)
        spy.wait(30)


async def gets(c: api_bench.Client, n: int) -> None:
    url = f"{c.server}/api/v1/namespaces/default"

    async def worker() -> None:
        for _ in range(n // WORKERS):
            async with c.session.get(url) as r:
                assert r.status == 200, r.status
                await r.read()

    await asyncio.gather(*(worker() for _ in range(WORKERS)))


def admitted_pod(name: str) -> dict:
    """api_bench.pod as the default admission chain leaves it (ServiceAccount's token volume
    and mounts, DefaultTolerationSeconds' tolerations, Priority's 0): what a server without
    admission stores when sent this, it stores with admission from api_bench.pod."""
    p = api_bench.pod(name)
    volume = "kube-api-access-" + "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
    spec = p["spec"]
    spec["volumes"] = [{"name": volume, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                       "fieldPath": "metadata.namespace"}}]}}]}}]
    spec["containers"][0]["volumeMounts"] = [{"name": volume, "readOnly": True,
                                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    spec["tolerations"] = [{"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": 300} for k in ("not-ready", "unreachable")]
    spec["serviceAccountName"], spec["priority"] = "default", 0
    return p


async def creates(c: api_bench.Client, n: int, make_pod: Any = api_bench.pod) -> None:
    url = f"{c.server}/api/v1/namespaces/default/pods"
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}   # see api_bench
    async with c.session.post(f"{c.server}/api/v1/namespaces/default/serviceaccounts", data=json.dumps(sa)) as r:
        assert r.status in (201, 409), await r.text()

    async def worker(i: int) -> None:
        for k in range(n // WORKERS):
            async with c.session.post(url, data=json.dumps(make_pod(f"p-{i}-{k}"))) as r:
                assert r.status == 201, await r.text()
                await r.read()

    await asyncio.gather(*(worker(i) for i in range(WORKERS)))


async def watched_creates(c: api_bench.Client, n: int, watchers: int = 10) -> None:
    """n ConfigMap creates (rounded down to a multiple of WORKERS) while `watchers` watch streams
    read them; returns once all saw all."""
    n -= n % WORKERS
    lst = await (await c.session.get(f"{c.server}/api/v1/namespaces/default/configmaps?limit=1")).read()
    rv = json.loads(lst)["metadata"]["resourceVersion"]
    url = f"{c.server}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=600"
    started = asyncio.Event()
    opened = 0

    async def watch() -> None:
        nonlocal opened
        seen = 0
        async with c.session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as r:
            opened += 1
            if opened == watchers:
                started.set()
            async for _ in r.content:
                seen += 1
                if seen == n:
                    return

    async def writer(w: int) -> None:
        for k in range(n // WORKERS):
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{w}-{k}"}, "data": {"k": "v"}}
            async with c.session.post(f"{c.server}/api/v1/namespaces/default/configmaps", data=json.dumps(body)) as r:
                assert r.status == 201, await r.text()
                await r.read()

    tasks = [asyncio.ensure_future(watch()) for _ in range(watchers)]
    await asyncio.wait_for(started.wait(), 30)
    await asyncio.gather(*(writer(w) for w in range(WORKERS)))
    await asyncio.wait_for(asyncio.gather(*tasks), 120)


def one_run(n_gets: int, n_creates: int, n_watched: int, up_args: tuple[str, ...] = (),
            make_pod: Any = api_bench.pod) -> tuple[float, float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        proc, _ = api_bench.start_up(pathlib.Path(tmp), "sqlite", ["--no-controllers", *up_args])
        try:
            async def measure() -> tuple[float, float, float, float]:
                c = api_bench.Client(pathlib.Path(tmp) / "kubeconfig", WORKERS)
                try:
                    await gets(c, 2000)
                    t0 = cpu_seconds(proc.pid)
                    await gets(c, n_gets)
                    t1, l1 = cpu_seconds(proc.pid), cpu_seconds(proc.pid, loop_only=True)
                    w1, c1 = time.perf_counter(), time.process_time()
                    th1, r1 = threads(proc.pid), os.times()
                    spy = _py_spy(proc.pid)
                    await creates(c, n_creates, make_pod)
                    w2, c2 = time.perf_counter(), time.process_time()
                    th2, r2 = threads(proc.pid), os.times()
                    for name, (u, s_, v, iv) in th2.items():
                        u0, s0, v0, iv0 = th1.get(name, (0.0, 0.0, 0, 0))
                        if u - u0 + s_ - s0 or v - v0:
                            print(f"  thread {name}: user {(u - u0) / n_creates * 1e6:.1f} µs, sys "
                                  f"{(s_ - s0) / n_creates * 1e6:.1f} µs, switches {(v - v0) / n_creates:.2f} "
                                  f"voluntary {(iv - iv0) / n_creates:.2f} involuntary per create")
                    print(f"  client: user {(r2.user - r1.user) / n_creates * 1e6:.1f} µs, "
                          f"sys {(r2.system - r1.system) / n_creates * 1e6:.1f} µs per create")
                    t2, l2 = cpu_seconds(proc.pid), cpu_seconds(proc.pid, loop_only=True)
                    _stop(spy)
                    print(f"creates: {n_creates / (w2 - w1):.0f}/s wall, server {(t2 - t1) / (w2 - w1) * 100:.0f} % "
                          f"of a core (loop thread {(l2 - l1) / (w2 - w1) * 100:.0f} %), client "
                          f"{(c2 - c1) / n_creates * 1e6:.1f} µs per create ({(c2 - c1) / (w2 - w1) * 100:.0f} %)",
                          flush=True)
                    await watched_creates(c, n_watched)
                    t3 = cpu_seconds(proc.pid)
                    return ((t1 - t0) / n_gets * 1e6, (t2 - t1) / n_creates * 1e6, (l2 - l1) / n_creates * 1e6,
                            (t3 - t2) / n_watched * 1e6)
                finally:
                    await c.close()
            return asyncio.run(measure())
        finally:
            api_bench.stop(proc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gets", type=int, default=20_000)
    ap.add_argument("--creates", type=int, default=4000)
    ap.add_argument("--watched", type=int, default=4000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--up-args", default="", help="more flags for `up`, e.g. '--audit-policy-file p.yaml "
                                                  "--audit-log-path /tmp/audit.log'")
    ap.add_argument("--admitted-pods", action="store_true",
                    help="create pods already in the shape admission gives them (admitted_pod): with "
                         "--up-args '--disable-admission-plugins=...', the cost of the same stored pods without admission")
    args = ap.parse_args()
    make_pod = admitted_pod if args.admitted_pods else api_bench.pod
    results = [one_run(args.gets, args.creates, args.watched, tuple(args.up_args.split()), make_pod)
               for _ in range(args.runs)]
    for (g, c, lc, w) in results:
        print(f"run: GET {g:.1f} µs, create {c:.1f} µs (event loop thread {lc:.1f}), watched create {w:.1f} µs")
    print(f"server CPU µs per request, median of {args.runs}: GET {statistics.median(r[0] for r in results):.1f}, "
          f"create {statistics.median(r[1] for r in results):.1f} "
          f"(event loop thread {statistics.median(r[2] for r in results):.1f}), "
          f"watched create {statistics.median(r[3] for r in results):.1f}")


if __name__ == "__main__":
    main()
