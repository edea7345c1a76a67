"""The Kubernetes JSON schema for the kinds kubeplane serves (generated: tools/gen_schema.py).

`definitions()` maps a definition name ("io.k8s.api.apps.v1.DeploymentSpec") to its JSON
schema node, with descriptions and the x-kubernetes-* extensions (patch strategy, merge key,
list type). Loaded lazily: start-up does not pay for it until a request needs it.
"""
from __future__ import annotations

import functools
import pathlib
from typing import Any

import orjson

_PATH = pathlib.Path(__file__).with_name("definitions.json")


@functools.cache
def definitions() -> dict[str, dict[str, Any]]:
    return orjson.loads(_PATH.read_bytes())


def ref_name(node: dict[str, Any]) -> str | None:
    """The definition a schema node points at ("$ref": "#/$defs/<name>"), or None."""
    ref = node.get("$ref")
    return ref.rsplit("/", 1)[1] if isinstance(ref, str) else None


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    """Follow a $ref (if any) to the definition's schema node."""
    name = ref_name(node)
    return definitions()[name] if name else node


def property_schema(def_name: str, field: str) -> dict[str, Any] | None:
    """The schema node of `field` inside definition `def_name`, unresolved (keeps x-kubernetes-*)."""
    return definitions()[def_name].get("properties", {}).get(field)
