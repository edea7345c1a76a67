"""Request body decoding and response encoding (content negotiation).

Request bodies may be JSON (also when no Content-Type is sent, as the Python client does),
YAML, or Kubernetes protobuf (`kubectl create <generator>` sends it with no JSON fallback).
Responses are JSON; a Table when the client asks `as=Table` (kubectl get).
"""
from __future__ import annotations

from typing import Any

import orjson
import yaml

from ..api import errors

MAX_BODY = 3 * 1024 * 1024          # upstream's request-body limit for non-streaming writes
JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
ACCEPTED = [JSON, YAML, PROTOBUF]


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def decode_body(headers: dict[str, str], body: bytes) -> tuple[dict[str, Any], list[str]]:
    """Decode a create/update body; returns (object, duplicate-field messages)."""
    if len(body) > MAX_BODY:
        raise errors.RequestEntityTooLarge()
    mt = media_type(headers.get("content-type", "")) or JSON
    if mt == JSON or mt == "*/*":
        return decode_json(body)
    if mt in (YAML, "application/apply-patch+yaml", "text/yaml"):
        return decode_yaml(body)
    if mt == PROTOBUF:
        from ..api import protobuf
        return protobuf.decode(body), []
    raise errors.UnsupportedMediaType(mt, ACCEPTED)


def decode_json(body: bytes) -> tuple[dict[str, Any], list[str]]:
    try:
        from ..api import decode
    except ImportError:                               # pragma: no cover - during bring-up
        decode = None
    if decode is not None:
        obj, dups = decode.decode_json(body)
    else:
        try:
            obj, dups = orjson.loads(body), []
        except orjson.JSONDecodeError as e:
            raise errors.BadRequest(f"error decoding JSON: {e}") from None
    if not isinstance(obj, dict):
        raise errors.BadRequest("the body of the request must be a JSON object")
    return obj, dups


def decode_yaml(body: bytes) -> tuple[dict[str, Any], list[str]]:
    try:
        from ..api import decode
        obj, dups = decode.decode_yaml(body)
    except ImportError:                               # pragma: no cover - during bring-up
        try:
            obj, dups = yaml.safe_load(body), []
        except yaml.YAMLError as e:
            raise errors.BadRequest(f"error decoding YAML: {e}") from None
    if not isinstance(obj, dict):
        raise errors.BadRequest("the body of the request must be an object")
    return obj, dups


def wants_table(headers: dict[str, str]) -> bool:
    return "as=Table" in headers.get("accept", "")


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)
