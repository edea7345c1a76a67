"""Metrics benchmark: what the API server's /metrics costs on the in-process hot path, and the
client-library comparison behind the choice of prometheus_client.

Run:  .venv/bin/python benchmarks/metrics_bench.py [-n 2000] [--rounds 3] [--libraries]

Default: benchmarks/inprocess_writes.py's write mix (pod create, binding, two status patches,
Event create; memory storage, InstrumentedStorage as `kubeplane up` wires it), in three
configurations interleaved round by round in one process so the machine's drift hits all alike:
  off       request metrics replaced by a no-op, plain storage
  requests  request metrics (apiserver_request_*), plain storage
  all       request metrics and the etcd_* storage metrics (what `up` runs)
Prints the median CPU µs per write of each phase and configuration.

--libraries: the cost of one labelled counter inc + histogram observe (9 and 8 labels, 23
buckets: apiserver_request_total + apiserver_request_duration_seconds) in prometheus_client
(labels() per call, and children kept), aioprometheus (if installed: it is not a dependency),
and the plain lists metrics.py keeps; and a check that each library's text output parses with
prometheus_client's parser.
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import statistics
import sys
import time
from bisect import bisect_left
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import inprocess_writes

from kubeplane.apiserver import metrics
from kubeplane.storage import MemoryStorage

CONFIGS = ("off", "requests", "all")
PHASES = ("create", "bind", "status", "event")
LABELS = ("PATCH", "", "", "v1", "pods", "status", "resource", "apiserver")


def configure(name: str) -> None:
    real_monitor = configure.__dict__.setdefault("monitor", metrics.monitor_request)
    metrics.monitor_request = (lambda req, info, resp, elapsed: resp) if name == "off" else real_monitor
    inprocess_writes.MemoryStorage = ((lambda: metrics.InstrumentedStorage(MemoryStorage()))  # type: ignore[misc]
                                      if name == "all" else MemoryStorage)


def hot_path(n: int, rounds: int) -> None:
    results: dict[str, list[dict[str, float]]] = {c: [] for c in CONFIGS}
    for _ in range(rounds):
        for name in CONFIGS:
            configure(name)
            results[name].append(asyncio.run(inprocess_writes.one_run(n)))
    configure("requests")
    print(f"CPU µs per write, median of {rounds} interleaved rounds of {n} pods:")
    print(f"  {'phase':8s}" + "".join(f"{c:>10s}" for c in CONFIGS))
    for phase in PHASES:
        row = [statistics.median(r[phase] for r in results[c]) for c in CONFIGS]
        print(f"  {phase:8s}" + "".join(f"{v:10.1f}" for v in row))


def libraries(n: int = 200_000) -> None:
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    buckets = metrics.LATENCY_BUCKETS
    names = ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"]
    reg = CollectorRegistry()
    c = Counter("apiserver_request_total", "h", [*names, "code"], registry=reg)
    h = Histogram("apiserver_request_duration_seconds", "h", names, buckets=buckets, registry=reg)

    def per_call() -> None:
        c.labels(*LABELS, "200").inc()
        h.labels(*LABELS).observe(0.0123)

    kept = (c.labels(*LABELS, "200"), h.labels(*LABELS))

    def children_kept() -> None:
        kept[0].inc()
        kept[1].observe(0.0123)

    plain = [0] * (len(buckets) + 2)
    codes: dict[int, int] = {}

    def plain_lists() -> None:
        codes[200] = codes.get(200, 0) + 1
        plain[bisect_left(buckets, 0.0123)] += 1
        plain[-1] += 0.0123

    rows = [("prometheus_client, labels() per call", per_call), ("prometheus_client, children kept", children_kept),
            ("plain lists (metrics.py)", plain_lists)]
    outputs = {"prometheus_client": generate_latest(reg).decode()}
    try:
        import aioprometheus
        from aioprometheus.renderer import render
        ac = aioprometheus.Counter("apiserver_request_total", "h")
        ah = aioprometheus.Histogram("apiserver_request_duration_seconds", "h", buckets=buckets)
        labels = dict(zip(names, LABELS))

        def aio() -> None:
            ac.inc({**labels, "code": "200"})
            ah.observe(labels, 0.0123)

        rows.insert(2, ("aioprometheus", aio))
        aio()
        areg = aioprometheus.Registry()
        areg.register(ac)
        areg.register(ah)
        body, _ = render(areg, [])
        outputs["aioprometheus"] = body.decode() if isinstance(body, bytes) else body
    except ImportError:
        print("(aioprometheus not installed: `pip install aioprometheus` to compare)")
    print(f"µs per request (one counter inc + one histogram observe), best of 5 × {n}:")
    for label, fn in rows:
        best = min(_timed(fn, n) for _ in range(5))
        print(f"  {label:40s} {best:6.2f}")
    for lib, text in outputs.items():
        families = {f.name: f for f in text_string_to_metric_families(text)}
        les = [s.labels["le"] for s in families["apiserver_request_duration_seconds"].samples
               if s.name.endswith("_bucket")]
        print(f"  {lib}: parses; {len(families)} families; {len(les)} buckets, last {les[-1]!r}")


def _timed(fn: Any, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=2000, help="pods per run (default 2000)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--libraries", action="store_true", help="compare the client libraries instead")
    args = ap.parse_args()
    if args.libraries:
        libraries()
    else:
        hot_path(args.n, args.rounds)


if __name__ == "__main__":
    main()
