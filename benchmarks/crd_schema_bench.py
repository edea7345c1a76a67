"""Cost of the CRD schema library per custom object: validate, prune and default a typical CR.

Run:  .venv/bin/python benchmarks/crd_schema_bench.py [-n 20000] [--runs 5]

The schema is a typical operator's: a spec of 10 fields (integers with bounds, strings with a
pattern, an enum and a format, an int-or-string, a string map, a list-map of ports, a nested
object with defaults) and a status. Per run: `validate(s, obj)` (kube-openapi rules, embedded
resources, list sets/maps), `validate_update(s, new, old)` (one field changed: ratcheting walks
old and new together), `prune(obj, s)` and `default(obj, s)` on a fresh copy, each timed alone
(CPU time, time.process_time: the machine is shared; median of --runs, µs per object). For
reference, jsonschema_rs (a Rust JSON-Schema validator, installed with the test extras) checking
the same schema with
`is_valid` — it has neither upstream's messages and paths nor the x-kubernetes-* semantics,
which is why the library compiles its own validator.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time
from typing import Any

from kubeplane.apiserver.apiextensions.schema import default, prune, structural_from, validate, validate_update

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "required": ["image", "replicas"], "properties": {
            "image": {"type": "string", "minLength": 1},
            "replicas": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 100},
            "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
            "name": {"type": "string", "pattern": "^[a-z0-9-]+$", "maxLength": 63},
            "port": {"x-kubernetes-int-or-string": True},
            "schedule": {"type": "string", "format": "date-time"},
            "paused": {"type": "boolean", "default": False},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"}, "port": {"type": "integer"}}}},
            "resources": {"type": "object", "default": {}, "properties": {
                "cpu": {"type": "string", "default": "100m"}, "memory": {"type": "string", "default": "64Mi"}}},
        }},
        "status": {"type": "object", "properties": {"ready": {"type": "integer"}}},
    },
}
OBJ: dict[str, Any] = {
    "apiVersion": "example.com/v1", "kind": "App",
    "metadata": {"name": "app-1", "namespace": "default", "labels": {"app": "a"}},
    "spec": {"image": "nginx:1.25", "replicas": 3, "mode": "fast", "name": "app-1", "port": "http",
             "schedule": "2024-01-02T03:04:05Z", "paused": False, "labels": {"tier": "web"},
             "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
             "resources": {"cpu": "1"}},
}


def per_object(fn: Any, objs: list[Any]) -> float:
    t = time.process_time()
    for o in objs:
        fn(o)
    return (time.process_time() - t) / len(objs) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    s = structural_from(SCHEMA)
    assert validate(s, OBJ) == []
    figures: dict[str, list[float]] = {"validate": [], "validate_update": [], "prune": [], "default": [],
                                       "compile (ms)": []}
    new = copy.deepcopy(OBJ)
    new["spec"]["replicas"] = 4
    try:
        import jsonschema_rs  # type: ignore[import-not-found]
        rs = jsonschema_rs.validator_for(SCHEMA)
        figures["jsonschema_rs is_valid"] = []
    except ImportError:
        rs = None
    for _ in range(args.runs):
        figures["validate"].append(per_object(lambda o: validate(s, o), [OBJ] * args.n))
        figures["validate_update"].append(per_object(lambda o: validate_update(s, o, OBJ), [new] * args.n))
        figures["prune"].append(per_object(lambda o: prune(o, s), [copy.deepcopy(OBJ) for _ in range(args.n)]))
        figures["default"].append(per_object(lambda o: default(o, s), [copy.deepcopy(OBJ) for _ in range(args.n)]))
        t = time.process_time()
        validate(structural_from(SCHEMA), OBJ)
        figures["compile (ms)"].append((time.process_time() - t) * 1e3)
        if rs is not None:
            figures["jsonschema_rs is_valid"].append(per_object(rs.is_valid, [OBJ] * args.n))
    for name, xs in figures.items():
        unit = "" if "ms" in name else " µs/object"
        print(f"{name:24s} {statistics.median(xs):8.2f}{unit}")


if __name__ == "__main__":
    main()
