"""The protobuf form of /openapi/v2: gnostic's openapi_v2.Document, written by hand.

client-go's discovery `OpenAPISchema()` (and kubectl before 1.27) asks for
`application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and unmarshals an
openapi_v2.Document (github.com/google/gnostic-models, openapiv2/OpenAPIv2.proto). Upstream
builds it from the JSON document (ToProtoBinary: openapi_v2.ParseDocument, then proto.Marshal);
we encode the same JSON-shaped dict directly, for the subset of swagger 2.0 the document uses.
No protobuf library is a dependency and the encoding needs only the writer half of api/protobuf/wire.py:
tag = field_number << 3 | wire_type; strings, bytes and sub-messages are length-delimited (2),
bools and integers varints (0), doubles fixed64 (1). Fields are written in field-number order,
repeated ones in the document's order; proto3 zero values (empty strings, false, 0) are omitted.

Vendor extensions (x-kubernetes-*) and other free-form values are gnostic `Any`s whose `yaml`
field holds the value's text; we write it as JSON, which is YAML (yaml.v2/v3 read it the same way).
Keys gnostic rejects in a Schema (oneOf, nullable, ...) are not in our document; any that were
would be dropped here rather than fail the whole answer.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import orjson

_MASK64 = (1 << 64) - 1


# --- the wire format (writer) --------------------------------------------------------------------

def _varint(n: int) -> bytes:
    n &= _MASK64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _message(number: int, payload: bytes) -> bytes:
    """A length-delimited field; written even when empty (a set sub-message)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _string(number: int, value: Any) -> bytes:
    return _message(number, value.encode()) if isinstance(value, str) and value else b""


def _strings(number: int, values: Any) -> bytes:
    return b"".join(_message(number, v.encode()) for v in values or ())


def _bool(number: int, value: Any) -> bytes:
    return _varint(number << 3) + b"\x01" if value is True else b""


def _int(number: int, value: Any) -> bytes:
    return _varint(number << 3) + _varint(int(value)) if isinstance(value, int) and value else b""


def _double(number: int, value: Any) -> bytes:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value
    return _varint(number << 3 | 1) + struct.pack("<d", float(value)) if ok else b""


def _any(number: int, value: Any) -> bytes:
    """openapi_v2.Any{yaml: <the value as JSON text>}."""
    return _message(number, _string(2, orjson.dumps(value).decode() + "\n"))


def _extensions(number: int, node: dict[str, Any]) -> bytes:
    """repeated NamedAny vendor_extension: every x-* key, in the document's order."""
    return b"".join(_message(number, _string(1, k) + _any(2, v)) for k, v in node.items() if k.startswith("x-"))


def _named(number: int, mapping: dict[str, Any] | None, encode: Callable[[Any], bytes]) -> bytes:
    """repeated Named<X>{name = 1; value = 2}, one per map entry."""
    return b"".join(_message(number, _string(1, k) + _message(2, encode(v))) for k, v in (mapping or {}).items())


# --- openapi_v2 messages ---------------------------------------------------------------------------

def encode_document(doc: dict[str, Any]) -> bytes:
    """message Document: swagger 1, info 2, schemes 5, consumes 6, produces 7, paths 8,
    definitions 9, parameters 10, security 12, security_definitions 13, vendor_extension 16."""
    out = [_string(1, doc.get("swagger"))]
    if "info" in doc:
        info = doc["info"]
        out.append(_message(2, _string(1, info.get("title")) + _string(2, info.get("version"))
                            + _string(3, info.get("description")) + _extensions(7, info)))
    out += [_string(3, doc.get("host")), _string(4, doc.get("basePath")), _strings(5, doc.get("schemes")),
            _strings(6, doc.get("consumes")), _strings(7, doc.get("produces"))]
    if "paths" in doc:
        out.append(_message(8, _named(2, doc["paths"], _path_item)))
    if "definitions" in doc:
        out.append(_message(9, _named(1, doc["definitions"], _schema)))
    if "parameters" in doc:
        out.append(_message(10, _named(1, doc["parameters"], _parameter)))
    out += [_message(12, _security_requirement(s)) for s in doc.get("security", ())]
    if "securityDefinitions" in doc:
        out.append(_message(13, _named(1, doc["securityDefinitions"], _security_definition)))
    out.append(_extensions(16, doc))
    return b"".join(out)


_OPERATIONS = (("get", 2), ("put", 3), ("post", 4), ("delete", 5), ("options", 6), ("head", 7), ("patch", 8))


def _path_item(item: dict[str, Any]) -> bytes:
    out = [_string(1, item.get("$ref"))]
    out += [_message(n, _operation(item[m])) for m, n in _OPERATIONS if m in item]
    out += [_message(9, _parameters_item(p)) for p in item.get("parameters", ())]
    out.append(_extensions(10, item))
    return b"".join(out)


def _operation(op: dict[str, Any]) -> bytes:
    out = [_strings(1, op.get("tags")), _string(2, op.get("summary")), _string(3, op.get("description")),
           _string(5, op.get("operationId")), _strings(6, op.get("produces")), _strings(7, op.get("consumes"))]
    out += [_message(8, _parameters_item(p)) for p in op.get("parameters", ())]
    if "responses" in op:
        responses = op["responses"]
        codes = {k: v for k, v in responses.items() if not k.startswith("x-")}
        out.append(_message(9, _named(1, codes, _response_value) + _extensions(2, responses)))
    out += [_strings(10, op.get("schemes")), _bool(11, op.get("deprecated"))]
    out += [_message(12, _security_requirement(s)) for s in op.get("security", ())]
    out.append(_extensions(13, op))
    return b"".join(out)


def _parameters_item(p: dict[str, Any]) -> bytes:
    """oneof {Parameter parameter = 1; JsonReference json_reference = 2}."""
    if "$ref" in p:
        return _message(2, _string(1, p["$ref"]) + _string(2, p.get("description")))
    return _message(1, _parameter(p))


# Field numbers of the non-body parameter sub-schemas (header 1, formData 2, query 3, path 4).
# Header and path lack allow_empty_value, so their later fields are one lower.
_NON_BODY = {"header": (1, False), "formData": (2, True), "query": (3, True), "path": (4, False)}


def _parameter(p: dict[str, Any]) -> bytes:
    """oneof {BodyParameter body_parameter = 1; NonBodyParameter non_body_parameter = 2}."""
    if p.get("in") == "body":
        body = (_string(1, p.get("description")) + _string(2, p.get("name")) + _string(3, p.get("in"))
                + _bool(4, p.get("required")) + (_message(5, _schema(p["schema"])) if "schema" in p else b"")
                + _extensions(6, p))
        return _message(1, body)
    which, has_allow_empty = _NON_BODY.get(p.get("in", ""), (3, True))
    shift = 1 if has_allow_empty else 0
    sub = [_bool(1, p.get("required")), _string(2, p.get("in")), _string(3, p.get("description")),
           _string(4, p.get("name"))]
    if has_allow_empty:
        sub.append(_bool(5, p.get("allowEmptyValue")))
    sub += [_string(5 + shift, p.get("type")), _string(6 + shift, p.get("format")),
            _string(8 + shift, p.get("collectionFormat"))]
    if "default" in p:
        sub.append(_any(9 + shift, p["default"]))
    sub += [_double(10 + shift, p.get("maximum")), _bool(11 + shift, p.get("exclusiveMaximum")),
            _double(12 + shift, p.get("minimum")), _bool(13 + shift, p.get("exclusiveMinimum")),
            _int(14 + shift, p.get("maxLength")), _int(15 + shift, p.get("minLength")),
            _string(16 + shift, p.get("pattern")), _int(17 + shift, p.get("maxItems")),
            _int(18 + shift, p.get("minItems")), _bool(19 + shift, p.get("uniqueItems"))]
    sub += [_any(20 + shift, v) for v in p.get("enum", ())]
    sub += [_double(21 + shift, p.get("multipleOf")), _extensions(22 + shift, p)]
    return _message(2, _message(which, b"".join(sub)))


def _response_value(r: dict[str, Any]) -> bytes:
    """oneof {Response response = 1; JsonReference json_reference = 2}."""
    if "$ref" in r:
        return _message(2, _string(1, r["$ref"]))
    out = _string(1, r.get("description"))
    if "schema" in r:
        out += _message(2, _message(1, _schema(r["schema"])))          # SchemaItem{schema = 1}
    return _message(1, out + _extensions(5, r))


def _schema(s: dict[str, Any]) -> bytes:
    """message Schema (gnostic's field numbers, written in their order)."""
    out = [_string(1, s.get("$ref")), _string(2, s.get("format")), _string(3, s.get("title")),
           _string(4, s.get("description"))]
    if "default" in s:
        out.append(_any(5, s["default"]))
    out += [_double(6, s.get("multipleOf")), _double(7, s.get("maximum")), _bool(8, s.get("exclusiveMaximum")),
            _double(9, s.get("minimum")), _bool(10, s.get("exclusiveMinimum")), _int(11, s.get("maxLength")),
            _int(12, s.get("minLength")), _string(13, s.get("pattern")), _int(14, s.get("maxItems")),
            _int(15, s.get("minItems")), _bool(16, s.get("uniqueItems")), _int(17, s.get("maxProperties")),
            _int(18, s.get("minProperties")), _strings(19, s.get("required"))]
    out += [_any(20, v) for v in s.get("enum", ())]
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        out.append(_message(21, _message(1, _schema(extra))))
    elif isinstance(extra, bool):
        out.append(_message(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00")))   # oneof: false is kept
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        out.append(_message(22, _strings(1, types)))
    if "items" in s:
        items = s["items"] if isinstance(s["items"], list) else [s["items"]]
        out.append(_message(23, b"".join(_message(1, _schema(i)) for i in items)))
    out += [_message(24, _schema(x)) for x in s.get("allOf", ())]
    if "properties" in s:
        out.append(_message(25, _named(1, s["properties"], _schema)))
    out += [_string(26, s.get("discriminator")), _bool(27, s.get("readOnly"))]
    if "example" in s:
        out.append(_any(30, s["example"]))
    out.append(_extensions(31, s))
    return b"".join(out)


def _security_requirement(req: dict[str, Any]) -> bytes:
    """message SecurityRequirement{repeated NamedStringArray additional_properties = 1}."""
    return _named(1, req, lambda scopes: _strings(1, scopes))


def _security_definition(d: dict[str, Any]) -> bytes:
    """SecurityDefinitionsItem: only apiKey (oneof field 2) and basic (1) are written."""
    if d.get("type") == "basic":
        return _message(1, _string(1, d.get("type")) + _string(2, d.get("description")) + _extensions(3, d))
    return _message(2, _string(1, d.get("type")) + _string(2, d.get("name")) + _string(3, d.get("in"))
                    + _string(4, d.get("description")) + _extensions(5, d))
