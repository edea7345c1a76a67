"""List continue tokens: base64url (no padding) of `{"v":"meta.k8s.io/v1","rv":N,"start":KEY}`.

A token comes back from the client, so it is input like any other: every way it can be wrong
gets upstream's 400 `invalid continue token: continue key is not valid: ...` with Go's own
reason (base64, JSON syntax, JSON types into the int64 rv, version, rv 0, empty or
path-escaping start key).
Upstream: continueToken, EncodeContinue, DecodeContinue (apiserver/pkg/storage/continue.go),
ValidateListOptions (storage/interfaces.go).
"""
from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from ...api import decode, errors

VERSION = "meta.k8s.io/v1"
ERR_INVALID_START_RV = "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
ERR_EMPTY_START_KEY = "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
ERR_GENERIC_INVALID_KEY = "continue key is not valid"
ERR_UNRECOGNIZED_ENCODED_VERSION = "continue key is not valid: server does not recognize this encoded version"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_RAW_URL_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
# The Go struct the token decodes into: json field name -> (Go type, Python type).
_FIELDS = {"v": ("string", str), "rv": ("int64", int), "start": ("string", str)}


def encode_continue(start: str, rev: int) -> str:
    """Upstream: EncodeContinue; start is relative to the list prefix."""
    token = orjson.dumps({"v": VERSION, "rv": rev, "start": start})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def decode_continue(token: str) -> tuple[str, int]:
    """(start key relative to the list prefix, resourceVersion); rv < 0 means "the latest".

    Raises upstream's 400, e.g. `invalid continue token: continue key is not valid: illegal
    base64 data at input byte 4`.
    """
    try:
        return _decode(token)
    except (TypeError, ValueError) as e:
        raise errors.BadRequest(f"invalid continue token: {e}") from None


def _decode(token: str) -> tuple[str, int]:
    data = _raw_url_b64decode(token)
    try:
        value = decode.parse_json(data)
    except ValueError as e:
        raise ValueError(f"{ERR_GENERIC_INVALID_KEY}: {e}") from None
    version, rv, start = _unmarshal(value)
    if version != VERSION:
        raise ValueError(f"{ERR_UNRECOGNIZED_ENCODED_VERSION} {version}")
    if rv == 0:
        raise ValueError(ERR_INVALID_START_RV)
    if not start:
        raise ValueError(ERR_EMPTY_START_KEY)
    # Defend against path traversal: the start key may not climb above the list prefix.
    key = start if start.startswith("/") else "/" + start
    cleaned = go_path_clean(key)
    if cleaned != key:
        raise ValueError(f"{ERR_GENERIC_INVALID_KEY}: {start}")
    return cleaned[1:], rv


def _raw_url_b64decode(token: str) -> bytes:
    """base64.RawURLEncoding.DecodeString, with its CorruptInputError offsets."""
    chars = []
    last = -1
    for i, ch in enumerate(token):
        if ch in "\r\n":              # Go skips newlines
            continue
        if ch not in _RAW_URL_ALPHABET:
            raise ValueError(f"{ERR_GENERIC_INVALID_KEY}: illegal base64 data at input byte {i}")
        chars.append(ch)
        last = i
    if len(chars) % 4 == 1:           # a lone sixth of a byte
        raise ValueError(f"{ERR_GENERIC_INVALID_KEY}: illegal base64 data at input byte {last}")
    text = "".join(chars)
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as e:   # not reachable with the checks above
        raise ValueError(f"{ERR_GENERIC_INVALID_KEY}: {e}") from None


def _unmarshal(value: Any) -> tuple[str, int, str]:
    """json.Unmarshal into continueToken: field names match case-insensitively, the last
    duplicate wins, unknown fields are ignored, null leaves the zero value."""
    if value is None:
        return "", 0, ""
    if not isinstance(value, dict):
        raise TypeError(f"{ERR_GENERIC_INVALID_KEY}: json: cannot unmarshal {decode.json_kind(value)} "
                         "into Go value of type storage.continueToken")
    out: dict[str, Any] = {"v": "", "rv": 0, "start": ""}
    for key, v in value.items():
        name = key if key in _FIELDS else next((f for f in _FIELDS if f.lower() == key.lower()), None)
        if name is None or v is None:
            continue
        go_type, py_type = _FIELDS[name]
        if type(v) is not py_type or (type(v) is int and not _INT64_MIN <= v <= _INT64_MAX):
            what = f"number {_number_text(v)}" if isinstance(v, (int, float)) and not isinstance(v, bool) \
                else decode.json_kind(v)
            raise TypeError(f"{ERR_GENERIC_INVALID_KEY}: json: cannot unmarshal {what} into Go struct field "
                             f"continueToken.{name} of type {go_type}")
        out[name] = v
    return out["v"], out["rv"], out["start"]


def _number_text(v: float) -> str:
    """The number Go could not store (Go quotes the literal as sent; 1e30 shows as 1e+30)."""
    return repr(v) if isinstance(v, float) else str(v)


def go_path_clean(p: str) -> str:
    """Go's path.Clean for a rooted path: no `.`/`..` elements, no doubled or trailing `/`."""
    out: list[str] = []
    for part in p.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            continue
        out.append(part)
    return "/" + "/".join(out)
