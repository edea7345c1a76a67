"""Rewrite loop: one 1 MiB ConfigMap written 1,000 times; how big do state.db and RSS get?

Run:  .venv/bin/python benchmarks/rewrite_loop.py [--writes 1000] [--size 1048000] [--up-args=...]
                                                  [--data-dir DIR]

Starts `kubeplane up --nodes 0` (sqlite, its own process, as a user runs it), creates one
ConfigMap whose single data value is `--size` bytes and replaces it `--writes - 1` times with
a different value each time (PUT, one at a time, over HTTPS with the kubeconfig's CA and token).
Then it reports the size of state.db (+ its -wal), the live data (the sum of the current
objects' stored bytes: their log rows, `kv JOIN log`), and the `up` process's peak RSS (VmHWM) and
current RSS (VmRSS) from /proc; then the same after a restart on the same data directory
(SIGTERM, start again, one GET of the ConfigMap).

Targets (issue 10): state.db (+wal) <= 20 x the live data and RSS <= 300 MB, after the loop
and after the restart.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from api_bench import Client, start_up, stop

MB = 1_000_000
NAME = "big"


def rss(pid: int) -> tuple[int, int]:
    """(VmHWM, VmRSS) of pid in bytes: the peak and the current resident set."""
    fields = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            fields[name] = int(value.split()[0]) * 1024
    return fields["VmHWM"], fields["VmRSS"]


def disk(data_dir: pathlib.Path) -> tuple[int, int]:
    """(state.db bytes, state.db-wal bytes)."""
    db, wal = data_dir / "state.db", data_dir / "state.db-wal"
    return db.stat().st_size, wal.stat().st_size if wal.exists() else 0


def live_bytes(data_dir: pathlib.Path) -> int:
    """The current objects' stored bytes (a read-only connection; WAL lets it read beside up)."""
    db = sqlite3.connect(f"file:{data_dir / 'state.db'}?mode=ro", uri=True)
    try:
        return db.execute("SELECT sum(length(log.value)) FROM kv JOIN log ON log.rev = kv.mod_rev").fetchone()[0]
    finally:
        db.close()


def settled_disk(data_dir: pathlib.Path, quiet: float = 3.0, limit: float = 20.0) -> tuple[int, int]:
    """The file sizes once they have not changed for `quiet` seconds (reclaim and the WAL's
    truncation run once the store has been idle for a moment)."""
    last, since, deadline = disk(data_dir), time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline and time.monotonic() - since < quiet:
        time.sleep(0.25)
        if (now := disk(data_dir)) != last:
            last, since = now, time.monotonic()
    return last


def report(label: str, data_dir: pathlib.Path, pid: int) -> dict[str, float]:
    db, wal = settled_disk(data_dir)
    live = live_bytes(data_dir)
    peak, cur = rss(pid)
    fig = {"db_mb": db / MB, "wal_mb": wal / MB, "live_mb": live / MB, "ratio": (db + wal) / live,
           "peak_rss_mb": peak / MB, "rss_mb": cur / MB}
    print(f"{label:<14} state.db {fig['db_mb']:8.1f} MB + wal {fig['wal_mb']:6.1f} MB"
          f"  live {fig['live_mb']:6.2f} MB  ({fig['ratio']:6.1f} x live)"
          f"  RSS peak {fig['peak_rss_mb']:7.1f} MB, now {fig['rss_mb']:7.1f} MB", flush=True)
    return fig


def configmap(i: int, size: int) -> dict:
    stamp = f"{i:010d}"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME},
            "data": {"blob": stamp * (size // len(stamp))}}


async def rewrite(kubeconfig: pathlib.Path, writes: int, size: int) -> float:
    c = Client(kubeconfig, 1)
    url = f"{c.server}/api/v1/namespaces/default/configmaps"
    t0 = time.perf_counter()
    try:
        async with c.session.post(url, data=json.dumps(configmap(0, size))) as r:
            assert r.status == 201, await r.text()
        for i in range(1, writes):
            async with c.session.put(f"{url}/{NAME}", data=json.dumps(configmap(i, size))) as r:
                assert r.status == 200, (await r.text())[:300]
                await r.read()
        return time.perf_counter() - t0
    finally:
        await c.close()


async def get_once(kubeconfig: pathlib.Path, size: int) -> None:
    c = Client(kubeconfig, 1)
    try:
        async with c.session.get(f"{c.server}/api/v1/namespaces/default/configmaps/{NAME}") as r:
            assert r.status == 200, r.status
            assert len((await r.json())["data"]["blob"]) >= size - 10
    finally:
        await c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=1000)
    ap.add_argument("--size", type=int, default=1_048_000, help="bytes of the data value (ConfigMaps hold <= 1 MiB)")
    ap.add_argument("--up-args", default="", help="extra arguments for `kubeplane up`, space-separated")
    ap.add_argument("--data-dir", type=pathlib.Path, help="use (and keep) this data dir instead of a temporary one")
    args = ap.parse_args()
    extra = args.up_args.split()
    with tempfile.TemporaryDirectory(prefix="kubeplane-rewrite-") as d:
        data_dir = args.data_dir or pathlib.Path(d)
        proc, _ = start_up(data_dir, "sqlite", extra)
        try:
            seconds = asyncio.run(rewrite(data_dir / "kubeconfig", args.writes, args.size))
            print(f"{args.writes} writes of {args.size / MB:.2f} MB in {seconds:.1f} s"
                  f" ({args.writes / seconds:.0f}/s)", flush=True)
            after = report("after the loop", data_dir, proc.pid)
        finally:
            stop(proc)
        proc, ready = start_up(data_dir, "sqlite", extra)
        try:
            asyncio.run(get_once(data_dir / "kubeconfig", args.size))
            print(f"restart ready in {ready:.2f} s")
            restart = report("after restart", data_dir, proc.pid)
        finally:
            stop(proc)
    ok = all(f["ratio"] <= 20 and f["peak_rss_mb"] <= 300 for f in (after, restart))
    print("targets (<= 20 x live, RSS <= 300 MB):", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
