"""Issue 12's measure: what authentication, authorization and admission add to a pod create.

Run:  .venv/bin/python benchmarks/chain_share.py [--pairs 8] [--seconds 5] [--connections 16]

Pod creates per second over HTTPS (api_bench.py's client and pod) against `kubeplane up
--no-controllers` on SQLite, with the whole chain (`up`'s defaults: Node,RBAC, the default
admission plugins) and without it (`--authorization-mode=AlwaysAllow` and every admission
plugin disabled: instructions.ADMISSION_OFF; kube-apiserver has no flag that skips
authentication, so both authenticate). Each pair starts one server of each kind, in
alternating order (a slow spell of the shared machine hits both sides alike), warms each up
with one second of creates, then counts creates for `--seconds`. The chain's share of a
create is creates/s without it over creates/s with it, minus one: printed per pair, and the
median and mean of the pairs; beside it the same ratio of the server's CPU per create (utime +
stime of all its threads over the timed creates, api_cpu.cpu_seconds), which moves less with
the machine's other load than throughput does.
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import statistics
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import api_bench
from api_cpu import cpu_seconds
from instructions import ADMISSION_OFF

CHAIN_OFF = ("--authorization-mode=AlwaysAllow", f"--disable-admission-plugins={ADMISSION_OFF}")


async def creates(up_args: tuple[str, ...], seconds: float, connections: int) -> tuple[float, float]:
    """(creates per second, the server's CPU µs per create) of one server."""
    with tempfile.TemporaryDirectory(prefix="chain-share-") as tmp:
        d = pathlib.Path(tmp) / "d"
        proc, _ = api_bench.start_up(d, "sqlite", ["--no-controllers", *up_args])
        try:
            c = api_bench.Client(d / "kubeconfig", connections)
            try:
                await api_bench.bench_create(c, 1.0, connections, prefix="warm")
                cpu = cpu_seconds(proc.pid)
                rate = await api_bench.bench_create(c, seconds, connections)
                return rate, 1e6 * (cpu_seconds(proc.pid) - cpu) / (rate * seconds)
            finally:
                await c.close()
        finally:
            api_bench.stop(proc)


async def main_async(args: argparse.Namespace) -> None:
    shares, cpu_shares = [], []
    for i in range(args.pairs):
        order = [("on", ()), ("off", CHAIN_OFF)]
        if i % 2:
            order.reverse()
        got = {name: await creates(up, args.seconds, args.connections) for name, up in order}
        (rate_on, cpu_on), (rate_off, cpu_off) = got["on"], got["off"]
        shares.append(rate_off / rate_on - 1)
        cpu_shares.append(cpu_on / cpu_off - 1)
        print(f"pair {i + 1}: creates/s with the chain {rate_on:,.0f}, without {rate_off:,.0f}: "
              f"{100 * shares[-1]:+.1f} %; server CPU per create {cpu_on:.1f} / {cpu_off:.1f} µs: "
              f"{100 * cpu_shares[-1]:+.1f} %", flush=True)
    for what, values in (("creates/s", shares), ("server CPU per create", cpu_shares)):
        print(f"the chain's share of a pod create over {args.pairs} pairs, by {what}: "
              f"median {100 * statistics.median(values):+.1f} %, mean {100 * statistics.mean(values):+.1f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--connections", type=int, default=16)
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
