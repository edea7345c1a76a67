"""What CRD validation rules (x-kubernetes-validations) cost per custom object, in-process.

    PYTHONPATH=src python benchmarks/crd_rules.py [--n 5000]

Times schema.validate (a create) and schema.validate_update (an update that changes nothing)
of a small custom object against the same schema without rules, with two (one on spec, one
transition rule on spec.name) and with three (a second one on spec).
"""
from __future__ import annotations

import argparse
import timeit

from kubeplane.apiserver.apiextensions import celvalidation, schema

SPEC = {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}, "name": {"type": "string"}}
OBJ = {"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"}, "spec": {"replicas": 2, "maxReplicas": 3, "name": "a"}}


def schemas() -> dict[str, dict]:
    ruled = {**SPEC, "name": {"type": "string", "x-kubernetes-validations": [
        {"rule": "self == oldSelf", "message": "Value is immutable"}]}}
    return {
        "no rules": {"type": "object", "properties": {"spec": {"type": "object", "properties": SPEC}}},
        "2 rules": {"type": "object", "properties": {"spec": {
            "type": "object", "properties": ruled,
            "x-kubernetes-validations": [{"rule": "self.replicas <= self.maxReplicas", "message": "m"}]}}},
        "3 rules": {"type": "object", "properties": {"spec": {
            "type": "object", "properties": ruled,
            "x-kubernetes-validations": [{"rule": "self.replicas <= self.maxReplicas", "message": "m"},
                                         {"rule": "size(self.name) < 64"}]}}},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    n = ap.parse_args().n
    celvalidation.install()
    for label, raw in schemas().items():
        s = schema.structural_from(raw)
        schema.validate(s, OBJ)                    # compile once
        create = timeit.timeit(lambda s=s: schema.validate(s, OBJ), number=n) / n
        update = timeit.timeit(lambda s=s: schema.validate_update(s, OBJ, OBJ), number=n) / n
        print(f"{label}: create {create * 1e6:.1f} us, update {update * 1e6:.1f} us")
    # the CRD write's checks (compile, type-check, cost) of the 3-rule schema; cold: a new rule
    # text each time (nothing cached), warm: the same CRD again
    from kubeplane.apiserver.apiextensions.schema import validate_crd_schema
    raw = schemas()["3 rules"]
    m = max(n // 50, 20)
    counter = iter(range(10 ** 9))

    def cold() -> None:
        fresh = {**raw, "x-kubernetes-validations": [{"rule": f"size(self.spec.name) < {next(counter)}"}]}
        validate_crd_schema({"openAPIV3Schema": fresh}, "spec.validation")
    warm = timeit.timeit(lambda: validate_crd_schema({"openAPIV3Schema": raw}, "spec.validation"), number=m) / m
    cold_t = timeit.timeit(cold, number=m) / m
    print(f"CRD write checks (3 rules): warm {warm * 1e3:.2f} ms, a new rule {cold_t * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
