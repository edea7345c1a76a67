"""Go-flavoured error text and the Status errors that patch failures become.

Upstream patch code reports plain Go errors whose text embeds `%v` renderings of decoded JSON
(`map[image:nginx]`, `[a b]`, `<nil>`), and the API server maps them to HTTP in
interpretStrategicMergePatchError / applyJSPatch (endpoints/handlers/patch.go). These helpers
reproduce both the text and the mapping so clients see the same messages.
"""
from __future__ import annotations

from typing import Any

import orjson

from kubeplane.api import decode, errors


def go_v(value: Any) -> str:
    """Render a decoded JSON value like Go's %v: map[k:v], [a b], <nil>, 80, 1.5, true."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_v(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_v(v) for v in value) + "]"
    return str(value)


def go_s(value: Any) -> str:
    """Render like Go's %s: strings verbatim, anything else as %!s(type=value)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"           # a nil interface: no type to print
    return f"%!s({go_type(value)}={go_v(value)})"


def go_type(value: Any) -> str:
    """reflect.TypeOf(v).String() for a value decoded by encoding/json (ints preserved)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def go_json_kind(value: Any) -> str:
    """The JSON kind encoding/json names in "cannot unmarshal X into Go value" errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def hkey(value: Any) -> Any:
    """A hashable identity for a JSON value that, like Go's interface ==, keeps types apart."""
    if isinstance(value, (dict, list)):
        return ("json", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    return (type(value).__name__, value)


def same(a: Any, b: Any) -> bool:
    """Go's interface == for JSON scalars: equal values of the same dynamic type."""
    return type(a) is type(b) and a == b


def unprocessable(detail: str) -> errors.StatusError:
    """errors.NewGenericServerResponse(422, ...): the detail is *not* shown, as upstream.

    kubectl prints this as "The request is invalid: the server rejected our request due to
    an error in our request"; we keep the detail on the exception for our own logs.
    """
    err = errors.StatusError(422, "Invalid", "the server rejected our request due to an error in our request",
                             {})
    err.detail = detail  # type: ignore[attr-defined]
    return err


def decode_json(body: bytes) -> Any:
    """Decode a JSON request body as Go's encoding/json does (unpaired surrogates become
    U+FFFD, numbers beyond float64 are refused); malformed JSON raises ValueError with Go's
    text: `invalid character 'x' looking for beginning of value`."""
    return decode.parse_json(body)
