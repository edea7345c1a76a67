"""The protobuf wire format, just enough to read Kubernetes messages (proto2, no groups).

A message is a sequence of (tag, value) records; tag = field_number << 3 | wire_type:
  0 varint, 1 fixed64 (8 bytes little-endian), 2 length-delimited (varint length + bytes),
  5 fixed32 (4 bytes little-endian). Wire types 3 and 4 (groups) are never used by Kubernetes.
Example: `08 00` is field 1, varint 0; `12 05 6e 67 69 6e 78` is field 2, the 5 bytes "nginx".
"""
from __future__ import annotations

from collections.abc import Iterator

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
_MASK64 = (1 << 64) - 1


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode a base-128 varint at `pos`; return (value, next position). At most 10 bytes."""
    result = shift = 0
    for i in range(pos, min(pos + 10, len(buf))):
        b = buf[i]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, i + 1
        shift += 7
    raise WireError("truncated or overlong varint" if len(buf) - pos < 10 else "varint longer than 10 bytes")


def iter_fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield (field number, wire type, value): an int for numeric wire types, bytes for LEN."""
    pos, end = 0, len(buf)
    while pos < end:
        tag, pos = read_varint(buf, pos)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise WireError("field number 0")
        if wire_type == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire_type == LEN:
            size, pos = read_varint(buf, pos)
            if size > end - pos:
                raise WireError(f"field {number}: length {size} runs past the end of the message")
            value, pos = buf[pos:pos + size], pos + size
        elif wire_type in (FIXED64, FIXED32):
            width = 8 if wire_type == FIXED64 else 4
            if width > end - pos:
                raise WireError(f"field {number}: truncated fixed{width * 8}")
            value, pos = int.from_bytes(buf[pos:pos + width], "little"), pos + width
        else:
            raise WireError(f"field {number}: unsupported wire type {wire_type}")
        yield number, wire_type, value


def signed(value: int, bits: int) -> int:
    """Reinterpret the low `bits` of an unsigned varint as two's complement (Go's int32(v)/int64(v))."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value
