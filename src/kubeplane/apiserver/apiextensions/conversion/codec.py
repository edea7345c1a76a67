"""A CRD's storage codec: custom objects cross versions where they meet storage, as upstream's.

A served version's write pipeline (decoding, defaulting, admission, strategy, validation) works
on the object in the version it was sent in; only then is it converted for storage:

    encode  the object converted to the storage version, then pruned with that version's
            schema (and nulls it does not allow dropped): schemaCoercingConverter
    decode  a stored object defaulted with its own version's schema (unstructuredDefaulter),
            converted to the served version, then pruned with that version's schema

So a create in v2 of a CRD stored as v1 is validated against v2's schema; the fields v1 does
not know are dropped on the way to storage (not before validation), and v1's defaults are
applied when the object is read (upstream stores what the encoder gives, without defaulting).

Objects already in the requested version whose schema has no defaults pass through untouched
(no copy, their stored bytes are answered as they are). A list is converted in one go: one
ConversionReview for the items not yet in the requested version (upstream's converter on an
UnstructuredList; its etcd3 store decodes items one by one).

Upstream: crdConversionRESTOptionsGetter.GetRESTOptions, schemaCoercingDecoder,
schemaCoercingConverter, unstructuredSchemaCoercer.apply, unstructuredDefaulter
(apiextensions-apiserver pkg/apiserver/customresource_handler.go) in versioning.codec's
Encode/Decode (apimachinery runtime/serializer/versioning).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ....api import errors
from ....storage.interface import KeyValue
from .. import schema
from ..schema import coercer
from .converter import CRConverter

Obj = dict[str, Any]


class CustomResourceCodec:
    """One CRD's objects between their versions and storage (shared by its served versions)."""

    def __init__(self, group: str, list_kind: str, storage_version: str, schemas: dict[str, schema.Structural],
                 defaults: set[str], converter: CRConverter) -> None:
        self.group, self.list_kind, self.storage_version = group, list_kind, storage_version
        self.schemas = schemas              # version -> its structural schema
        self.defaults = defaults            # the versions whose schema has a default
        # which schema nodes have a default under them (needs_defaults' memo, by id: the
        # schemas live as long as the codec)
        self._below: dict[int, bool] = {}
        self.converter = converter
        # The storage version's defaulter leaves objects coerced (defaulted, pruned, nulls
        # dropped): the content (coercer.content) of the last one it made; and the top-level
        # values (outside apiVersion, kind, metadata) of the last object encode found unchanged
        # since, so the write's response need not ask needs_defaults of what is stored (storage
        # copies the top level and metadata only: the values are the same objects).
        self._coerced: bytes | None = None
        self._defaulted: list[tuple[str, Any]] | None = None

    def for_version(self, version: str) -> VersionCodec:
        return VersionCodec(self, version)

    def coerce(self, obj: Obj, version: str) -> None:
        """Upstream: unstructuredSchemaCoercer.apply — prune with the version's schema, drop the
        nulls it does not allow."""
        s = self.schemas.get(version)
        if s is not None:
            schema.coerce(obj, s)

    def defaulted(self, obj: Obj) -> None:
        """obj, in the storage version, was just defaulted and coerced with its schema (the
        definition's defaulter): remember its content."""
        self._coerced = coercer.content(obj)

    async def encode(self, obj: Obj) -> Obj:
        """obj as stored: in the storage version, pruned with its schema. obj may be changed.

        An object whose content is what the storage version's defaulter last left (admission
        and the strategy changed nothing but metadata: the usual create or update in the
        storage version) is coerced already: only its metadata is looked at."""
        if obj.get("apiVersion") != f"{self.group}/{self.storage_version}":
            obj = orjson.loads(orjson.dumps(obj))       # the converter changes its input
            obj = (await self.converter.convert([obj], self.storage_version))[0]
        elif self._coerced is not None and coercer.content(obj) == self._coerced:
            coercer.coerce_resource_meta(obj, self.schemas[self.storage_version])
            self._defaulted = _content_values(obj)
            return obj
        self.coerce(obj, self.storage_version)
        return obj

    async def decode(self, kvs: list[KeyValue], version: str, list_kind: str = "") -> list[KeyValue]:
        """The stored objects as version serves them (new KeyValues where anything changed).
        `list_kind`: they are a list's items (one conversion for all)."""
        gv = f"{self.group}/{version}"
        if len(kvs) == 1 and self._defaulted is not None and version == self.storage_version \
                and kvs[0].obj.get("apiVersion") == gv and _same_values(_content_values(kvs[0].obj), self._defaulted):
            self._defaulted = None          # a write's response: what encode let through, defaulted
            return kvs
        todo = [i for i, kv in enumerate(kvs) if kv.obj.get("apiVersion") != gv
                or (version in self.defaults and schema.needs_defaults(kv.obj, self.schemas[version], self._below))]
        if not todo:
            return kvs
        objs = [orjson.loads(kvs[i].value) for i in todo]       # stored objects are shared: copies
        for o in objs:
            own = _version(o.get("apiVersion"))
            if own in self.defaults:
                schema.default(o, self.schemas[own])
        moves = [o.get("apiVersion") != gv for o in objs]
        if any(moves):
            converted = await self.converter.convert([o for o, m in zip(objs, moves) if m], version, list_kind)
            for o in converted:
                self.coerce(o, version)
            it = iter(converted)
            objs = [next(it) if m else o for o, m in zip(objs, moves)]
        out = list(kvs)
        for i, o in zip(todo, objs):
            kv = kvs[i]
            out[i] = KeyValue(kv.key, orjson.dumps(o), o, kv.create_revision, kv.mod_revision)
        return out


def _content_values(obj: Obj) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in obj.items() if k not in schema.META_FIELDS]


def _same_values(a: list[tuple[str, Any]], b: list[tuple[str, Any]]) -> bool:
    """The same keys in the same order, with the very same value objects."""
    return len(a) == len(b) and all(ka == kb and va is vb for (ka, va), (kb, vb) in zip(a, b))


def _version(api_version: Any) -> str:
    return api_version.rpartition("/")[2] if isinstance(api_version, str) else ""


@dataclass(frozen=True, slots=True)
class VersionCodec:
    """The codec as one served version uses it (registry.definition.StorageCodec)."""
    codec: CustomResourceCodec
    version: str

    async def encode(self, obj: Obj) -> Obj:
        return await self.codec.encode(obj)

    async def decode(self, kvs: list[KeyValue], as_list: bool = False) -> list[KeyValue]:
        return await self.codec.decode(kvs, self.version, self.codec.list_kind if as_list else "")


class UnresolvableCodec:
    """The codec of a CRD whose converter cannot be made (a conversion webhook's caBundle that
    holds no PEM certificate: client-go cannot make its client): every request to its kinds is
    upstream's answer when getOrCreateServingInfoFor fails (crdHandler.ServeHTTP)."""

    def for_version(self, version: str) -> UnresolvableCodec:
        return self

    async def encode(self, obj: Obj) -> Obj:
        raise errors.InternalError("error resolving resource")

    async def decode(self, kvs: list[KeyValue], as_list: bool = False) -> list[KeyValue]:
        raise errors.InternalError("error resolving resource")
