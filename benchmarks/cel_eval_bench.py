"""CEL evaluation against a Deployment: µs per evaluation, activation built each time as the
admission plugins build it per request (the cost accounting of cel/cost.py included).

Run:  .venv/bin/python benchmarks/cel_eval_bench.py [-n 20000]
"""
from __future__ import annotations

import argparse
import time

from kubeplane.apiserver.cel import compiler

EXPRESSIONS = (
    "object.spec.replicas <= 5",
    "has(object.metadata.labels) && 'app' in object.metadata.labels",
    "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.example.com/'))",
    "object.metadata.name.matches('^[a-z]+$')",
)


def deployment() -> dict:
    containers = [{"name": f"c{i}", "image": f"registry.example.com/app:{i}", "ports": [{"containerPort": 80}]}
                  for i in range(3)]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "default", "labels": {"app": "x"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": containers}}}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=20000)
    n = parser.parse_args().n
    env = compiler.env("object", "oldObject")
    d = deployment()
    for expression in EXPRESSIONS:
        r = env.compile(expression)
        started = time.perf_counter()
        for _ in range(n):
            got = compiler.evaluate(r, env.activation({"object": d, "oldObject": None}))
        assert got.value is True, got
        print(f"{(time.perf_counter() - started) / n * 1e6:7.1f} µs  {expression}")


if __name__ == "__main__":
    main()
