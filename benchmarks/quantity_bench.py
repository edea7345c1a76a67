"""Micro-benchmark of quantity parsing: the scheduler's MilliValue/Value and the QoS nanos.

    python benchmarks/quantity_bench.py            # this tree
    PYTHONPATH=<other>/src python benchmarks/quantity_bench.py

hot:  the same few strings again and again (a pod template's requests: the cached path)
cold: milli_value of distinct strings (every call a cache miss: the regex and the Fractions)
decode: api/decode.typed_decode of a pod whose container requests and limits cpu and memory
(4 quantities, canonical "100m"/"128Mi" or not: "0.1"/"134217728"), copy included
Best of 5 runs each.
Works against the tree before the single Quantity module too (scheduler/quantity, api/qos).
"""
from __future__ import annotations

import argparse
import copy
import timeit

from kubeplane.api.decode import typed_decode

try:
    from kubeplane.api.quantity import milli_value, nanos, value
except ImportError:                                        # the tree before api/quantity.py
    from kubeplane.api.qos import nanos  # type: ignore[attr-defined,no-redef]
    from kubeplane.scheduler.quantity import milli_value, value  # type: ignore[no-redef]

HOT = ("100m", "128Mi", "1", "500m", "1Gi", "250m")


def pod(cpu: str, mem: str) -> dict[str, object]:
    res = {"requests": {"cpu": cpu, "memory": mem}, "limits": {"cpu": cpu, "memory": mem}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": res}]}}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("-n", type=int, default=200_000)
    n = p.parse_args().n
    for name, fn in (("milli_value", milli_value), ("value", value), ("nanos", nanos)):
        t = min(timeit.repeat(lambda fn=fn: [fn(s) for s in HOT], number=n // len(HOT), repeat=5))
        print(f"hot  {name:12s} {t / n * 1e9:8.1f} ns/call")
    texts = [f"{i}.{i % 7}m" for i in range(n // 20)] + [f"{i}Mi" for i in range(n // 20)]
    t = min(timeit.repeat(lambda: [milli_value(s) for s in texts], number=1, repeat=5))
    print(f"cold milli_value      {t / len(texts) * 1e6:8.2f} µs/call")
    for label, p in (("canonical", pod("100m", "128Mi")), ("other", pod("0.1", "134217728"))):
        m = n // 20
        t = min(timeit.repeat(lambda p=p: typed_decode(copy.deepcopy(p), "io.k8s.api.core.v1.Pod"),
                              number=m, repeat=5))
        print(f"decode pod ({label:9s}) {t / m * 1e6:8.2f} µs/pod")


if __name__ == "__main__":
    main()
