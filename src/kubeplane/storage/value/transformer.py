"""Transformers: how a stored value becomes the bytes on disk and back (encryption at rest).

Upstream: value.Transformer, PrefixTransformer, NewPrefixTransformers
(k8s.io/apiserver/pkg/storage/value/transformer.go).

A transformer is told the storage key of every value it handles. The key plays the part of
upstream's value.Context: AES-GCM seals it in as additional authenticated data, so a
ciphertext copied under another key does not decrypt (upstream's etcd3 store passes the etcd
key, `authenticatedDataString(preparedKey)`; ours is the same string, e.g.
`/registry/secrets/default/db`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..interface import Transformer      # the store's hook; raises TransformError here


class TransformError(Exception):
    """A value could not be transformed (wrong key, corrupted or truncated data)."""


def aggregate(errs: list[TransformError]) -> TransformError:
    """One error as it is, several as "[a, b]" with duplicates dropped.

    Upstream: errors.Reduce(errors.NewAggregate(errs)) (apimachinery/pkg/util/errors).
    """
    msgs = list(dict.fromkeys(str(e) for e in errs))
    if len(msgs) == 1:
        return errs[0]
    return TransformError("[" + ", ".join(msgs) + "]")


@dataclass(frozen=True, slots=True)
class PrefixTransformer:
    """A transformer and the prefix its output is stored under (b"" for identity)."""

    prefix: bytes
    transformer: Transformer


class PrefixTransformers:
    """Reads with the first transformer whose prefix the data has, writes with the first.

    Upstream: prefixTransformers (transformer.go). A read through any transformer but the
    first is stale. A failed read does not stop the search: during a rotation the same
    prefix can appear twice (`aescbc` with the new key first, `aescbc` with the old key
    later), and the later one is the one that works. The empty prefix (identity) matches
    everything but refuses data that is encrypted, so the search goes on past it.
    """

    __slots__ = ("err", "transformers")

    def __init__(self, err: TransformError | None, *transformers: PrefixTransformer) -> None:
        if not transformers:
            raise ValueError("PrefixTransformers needs at least one transformer")
        self.transformers = transformers
        self.err = err or TransformError("the provided value does not match any of the supported transformers")

    def transform_from_storage(self, key: str, data: bytes) -> tuple[bytes, bool]:
        errs: list[TransformError] = []
        for i, t in enumerate(self.transformers):
            if not data.startswith(t.prefix):
                continue
            try:
                result, stale = t.transformer.transform_from_storage(key, data[len(t.prefix):])
            except TransformError as e:
                if t.prefix:                 # identity's refusal is not worth reporting
                    errs.append(e)
                continue
            return result, stale or i != 0
        if errs:
            raise aggregate(errs)
        raise self.err

    def transform_to_storage(self, key: str, data: bytes) -> bytes:
        first = self.transformers[0]
        return first.prefix + first.transformer.transform_to_storage(key, data)
