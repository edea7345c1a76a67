"""A small kopf operator, the one tests/kopf_example/test_operator.py tests with kubeplane.testing.

For each KopfExample (kopf's example CRD, crd.yaml) it keeps a ConfigMap child named after it
holding spec.field, reports what it did in the status, counts timer ticks, and on deletion (kopf
holds the object with its finalizer until the handler has run) leaves a ConfigMap saying so.
"""
from __future__ import annotations

import os
from typing import Any

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "kopf.dev", "v1", "kopfexamples"


def core_v1() -> kubernetes.client.CoreV1Api:
    # KUBECONFIG named explicitly: the kubernetes package reads the variable once, when imported
    # (its default location), and a test sets it later (to the control plane under test).
    kubernetes.config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    return kubernetes.client.CoreV1Api()


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_fn(spec: dict[str, Any], name: str, namespace: str, **_: Any) -> dict[str, Any]:
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-child"},
             "data": {"field": str(spec.get("field", ""))}}
    kopf.adopt(child)                              # owner reference: deleted with its parent
    core_v1().create_namespaced_config_map(namespace, child)
    return {"children": [child["metadata"]["name"]], "message": f"created with field={spec.get('field')}"}


@kopf.on.field(GROUP, VERSION, PLURAL, field="spec.field")
def field_fn(old: Any, new: Any, name: str, namespace: str, patch: kopf.Patch, **_: Any) -> None:
    if old is None:                                # the creation: create_fn has it
        return
    core_v1().patch_namespaced_config_map(f"{name}-child", namespace, {"data": {"field": str(new)}})
    patch.status["field"] = new


@kopf.timer(GROUP, VERSION, PLURAL, interval=0.2)
def tick(status: dict[str, Any], patch: kopf.Patch, **_: Any) -> None:
    patch.status["ticks"] = int(status.get("ticks") or 0) + 1


@kopf.on.delete(GROUP, VERSION, PLURAL)
def delete_fn(name: str, namespace: str, **_: Any) -> None:
    farewell = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-deleted"}}
    core_v1().create_namespaced_config_map(namespace, farewell)
