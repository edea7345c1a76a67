"""Request body decoding and response encoding (content negotiation).

Request bodies may be JSON (also when no Content-Type is sent, as the Python client does),
YAML, or Kubernetes protobuf (`kubectl create <generator>` sends it with no JSON fallback).
Responses are JSON; a Table when the client asks `as=Table` (kubectl get).
"""
from __future__ import annotations

from typing import Any

import orjson

from ..api import decode, errors, protobuf
from ..api.resources import ResourceInfo

MAX_BODY = 3 * 1024 * 1024          # upstream's request-body limit for non-streaming writes
JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = protobuf.CONTENT_TYPE
ACCEPTED = [JSON, YAML, PROTOBUF]
_YAML_TYPES = (YAML, "application/apply-patch+yaml", "text/yaml")


def media_type(headers: dict[str, str]) -> str:
    """The body's media type; no Content-Type means JSON (the Python client sends none)."""
    mt = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return JSON if mt in ("", "*/*") else mt


def decode_object(headers: dict[str, str], body: bytes, ri: ResourceInfo, field_validation: str | None, *,
                  prune_unknown: bool = True) -> tuple[dict[str, Any], list[str]]:
    """Decode a create/update body of resource ri; returns (object, warnings).

    JSON and YAML go through the strict decoder (unknown and duplicate fields per
    fieldValidation, unknown fields dropped, wrong types always 400); protobuf is typed on the
    wire already. prune_unknown=False: a server-side apply configuration (see decode_body).
    """
    return decode_typed(headers, body, ri.definition, ri.kind, ri.version, field_validation,
                        prune_unknown=prune_unknown)


def decode_typed(headers: dict[str, str], body: bytes, def_name: str, kind: str, version: str,
                 field_validation: str | None = None, *,
                 prune_unknown: bool = True) -> tuple[dict[str, Any], list[str]]:
    """Decode a body into the schema definition def_name (a kind, or a subresource's Binding,
    Scale, DeleteOptions ...) as upstream's typed decode does; returns (object, warnings)."""
    if len(body) > MAX_BODY:
        raise errors.RequestEntityTooLarge()
    mt = media_type(headers)
    if mt == PROTOBUF:
        return protobuf.decode(body), []
    if mt == JSON or mt in _YAML_TYPES:
        return decode.decode_body(body, def_name, kind=kind, version=version, content_type=mt,
                                  field_validation=field_validation, prune_unknown=prune_unknown)
    raise errors.UnsupportedMediaType(mt, ACCEPTED)


def wants_table(headers: dict[str, str]) -> bool:
    return "as=Table" in headers.get("accept", "")


PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"


def wants_partial(headers: dict[str, str]) -> tuple[str, str]:
    """(kind, apiVersion) of the metadata-only form the Accept header asks for —
    PartialObjectMetadata or PartialObjectMetadataList of meta.k8s.io/v1 (or v1beta1) —
    or ("", "") for the object itself: the first media range that is a plain one or such a
    conversion decides (client-go's metadata client sends the protobuf conversion, the JSON
    one, then plain JSON; we answer JSON for either). Upstream: negotiation.NegotiateOutputMediaType
    with RequestScope.AllowsMediaTypeTransform (endpoints/handlers/rest.go)."""
    accept = headers.get("accept", "")
    if "as=PartialObjectMetadata" not in accept:
        return "", ""
    for clause in accept.split(","):
        params = dict(p.strip().split("=", 1) for p in clause.split(";")[1:] if "=" in p)
        kind = params.get("as")
        if kind is None or kind == "Table":        # the object itself, or a Table (wants_table)
            return "", ""
        if kind in (PARTIAL, PARTIAL_LIST) and params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
            return kind, f"meta.k8s.io/{params['v']}"
    return "", ""


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)
