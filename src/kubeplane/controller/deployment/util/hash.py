"""The pod-template-hash: FNV-1a 32 over the template, plus the collision count, safe-encoded.

Upstream: controller.ComputeHash (pkg/controller/controller_utils.go), hashutil.DeepHashObject
(pkg/util/hash) and rand.SafeEncodeString (apimachinery/pkg/util/rand).

Upstream feeds the hasher a go-spew dump of the Go struct, which cannot be reproduced outside
Go (spec §3.2). We feed it a canonical, deterministic serialisation instead: the template's
JSON with keys sorted and unset fields omitted. Everything after the digest is upstream's:
the 8 collision-count bytes, the unsigned decimal string and the safe-encode alphabet. So a
hash here has upstream's format ([4-9bcdf]{1,10}), is stable for a given template, and
changes with every template change and every collisionCount bump.
"""
from __future__ import annotations

from typing import Any

import orjson

from ....api import types

FNV32_OFFSET_BASIS = 2166136261
FNV32_PRIME = 16777619

# Consonants and digits only, so an encoded string never spells a word. Upstream: alphanums.
SAFE_ENCODE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def fnv32a(data: bytes, h: int = FNV32_OFFSET_BASIS) -> int:
    """32-bit FNV-1a of data, continuing from h. Upstream: hash/fnv New32a + Write + Sum32."""
    for b in data:
        h = ((h ^ b) * FNV32_PRIME) & 0xFFFFFFFF
    return h


def canonical_bytes(template: Any) -> bytes:
    """The deterministic serialisation hashed in place of upstream's spew dump."""
    return orjson.dumps(types.to_dict(template), option=orjson.OPT_SORT_KEYS)


def collision_count_bytes(collision_count: int) -> bytes:
    """The count as a little-endian uint32 in 8 bytes (the last 4 stay zero), as upstream writes it.

    Example: 1 -> b"\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00"; -1 (never valid) -> ff ff ff ff 00 00 00 00.
    """
    return (collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\x00" * 4


def safe_encode_string(s: str) -> str:
    """Map every byte b to alphabet[b % 27]. Upstream: rand.SafeEncodeString

    For the decimal digits a hash is made of: 0->4 1->5 2->6 3->7 4->8 5->9 6->b 7->c 8->d
    9->f, so digest 1828506010 encodes as "5d6d94b454".
    """
    return "".join(SAFE_ENCODE_ALPHABET[b % len(SAFE_ENCODE_ALPHABET)] for b in s.encode())


def compute_hash(template: Any, collision_count: int | None) -> str:
    """The pod-template-hash label value of template. Upstream: ComputeHash

    A nil collisionCount adds nothing; 0 adds eight bytes, so nil and 0 hash differently.
    """
    h = fnv32a(canonical_bytes(template))
    if collision_count is not None:
        h = fnv32a(collision_count_bytes(collision_count), h)
    return safe_encode_string(str(h))
