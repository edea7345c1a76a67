"""ResourceDefinition: everything the API server knows about one resource, in one record.

A kind's module (registry/<group>/<kind>.py) builds its definition and registers it
(registry.register); routing, discovery, OpenAPI, storage keys, the write pipeline
(strategy, defaulting, validation), tables and field selectors all read it from there.
Upstream spreads the same facts over the scheme (defaulters, field label conversions), the
REST storage (strategy, table convertor, short names, categories) and the API group installer.

TypeDefinition is the same for a kind that is not a stored resource but is written through a
subresource (Binding, Scale): its defaulting and validation.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...storage.interface import KeyValue

from ...api.errors import FieldError
from ...api.resources import ResourceInfo
from ...api.validation import meta
from .strategy import Strategy
from .wrapper import StorageWrapper

Obj = dict[str, Any]
Defaulter = Callable[[Obj], None]
Validate = Callable[[Obj], list[FieldError]]
ValidateWithSpecJSON = Callable[[Obj, bytes], list[FieldError]]
ValidateUpdate = Callable[[Obj, Obj], list[FieldError]]
Warnings = Callable[[Obj], list[str]]
WarningsUpdate = Callable[[Obj, Obj], list[str]]
Column = dict[str, Any]
Row = tuple[list[Any], list[dict[str, Any]] | None]
Printer = Callable[[Obj, float], Row]
Converter = Callable[[Obj], Obj]
FieldGetter = Callable[[Obj], str]
# A REST Delete's own first step for an object not being deleted yet (server, the resource,
# the stored object, the DeleteOptions) -> the object as marked; nothing is removed (CRDs).
BeginDelete = Callable[[Any, ResourceInfo, Any, Any], Awaitable[Obj]]
# A create-only kind's answer (TokenReview, SubjectAccessReview, ...): (server, request, the
# validated object) -> the object with its status; nothing is stored.
Review = Callable[[Any, Any, Obj], Obj | Awaitable[Obj]]   # a coroutine for TokenReview


class StorageCodec(Protocol):
    """A served version whose objects cross versions at storage, by I/O (custom resources: the
    CRD's converter, maybe a webhook; apiextensions/conversion/codec.py). A failure raises a
    StatusError and nothing is written."""

    async def encode(self, obj: Obj) -> Obj:
        """The object as stored (obj may be changed)."""

    async def decode(self, kvs: list[KeyValue], as_list: bool = False) -> list[KeyValue]:
        """Stored objects as the version serves them (as_list: a list's items, converted together)."""


def meta_update(new: Obj, old: Obj) -> list[FieldError]:
    """The generic ObjectMeta update rules: every kind's update validation without its own."""
    return meta.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def update_then_create(create: Validate) -> ValidateUpdate:
    """ValidateXUpdate for kinds whose update is "the ObjectMeta update rules + the create rules
    on everything but metadata" (nodes, Scale)."""
    def update(new: Obj, old: Obj) -> list[FieldError]:
        return meta_update(new, old) + [e for e in create(new) if not e.field.startswith("metadata.")]
    return update


def no_errors(obj: Obj) -> list[FieldError]:
    return []


def no_warnings(obj: Obj) -> list[str]:
    return []


def no_update_warnings(new: Obj, old: Obj) -> list[str]:
    return []


def default_columns() -> list[Column]:
    from ..tables.columns import default_columns as columns
    return columns()


def default_printer(obj: Obj, now: float) -> Row:
    from ..tables.printers import print_default
    return print_default(obj, now)


@dataclass(frozen=True, slots=True)
class TypeDefinition:
    """Defaulting and validation of one apiVersion/kind (keyed by what an object says it is).

    `defaults_outside_spec`: the defaulter writes something outside obj["spec"] (the /status
    write path skips defaulting the spec of kinds where it does not, see
    api.defaults.set_defaults_except_spec).
    """
    api_version: str
    kind: str
    defaulter: Defaulter | None = None
    defaults_outside_spec: bool = False
    validate: Validate = no_errors
    validate_update: ValidateUpdate = meta_update
    validate_status_update: ValidateUpdate = meta_update
    warnings: Warnings = no_warnings


@dataclass(frozen=True, slots=True)
class ResourceDefinition(ResourceInfo):
    """One served resource: its identity (ResourceInfo: group, version, kind, plural, singular,
    namespaced, schema definition, short names, categories, subresources, verbs, storage
    prefix) and the server's behaviour for it. The behaviour fields take no part in equality
    and hashing: a definition is known by its identity.

    strategy            the generic store's hooks (prepare for create/update/status, graceful delete)
    defaulter ... warnings  defaulting and validation, as TypeDefinition's (the object's
                        apiVersion/kind picks them: events.k8s.io Events are stored as core ones)
    validate_subresource_update  subresource -> its own update validation (a subresource other
                        than status with its own strategy: pods/ephemeralcontainers)
    validate_with_spec_json  validate (create), given orjson.dumps(obj["spec"]): the store encodes
                        the spec once, for this and for the stored bytes (pods: the key of the
                        spec validation's memo); None: validate alone
    columns, printer    the Table columns (a builder, called once) and the row printer
    field_selectors     field label -> getter; None: only metadata.name/metadata.namespace
                        (upstream's DefaultMetaV1FieldSelectorConversion)
    returns_deleted_object  a delete answers the object (pods, namespaces), not a Status
                        (upstream: the store's ReturnDeletedObject); the OpenAPI documents of
                        DELETE say the same, unless openapi_delete_status
    openapi_delete_status  OpenAPI declares a Status as DELETE's answer all the same (namespaces:
                        upstream's namespace REST wraps its store instead of embedding it, so it
                        is no rest.MayReturnFullObjectDeleter to the API installer)
    deprecation_warning the Warning of every request to a deprecated kind (upstream: the
                        installer's deprecation.WarningMessage, from APILifecycleDeprecated)
    to_storage, from_storage  a version served from another version's storage (events.k8s.io
                        Events as core ones, autoscaling/v1 HPAs as v2): the request's object
                        into the stored form before the write pipeline (which then defaults and
                        validates it as the stored kind), and every answer back out of it.
                        None: the served version is the stored one. Upstream: the scheme's
                        conversions at the codec (storage version vs. request version).
    review              a create-only kind answered, not stored (registry/review.py)
    wrapper             checks around the generic store's create and update (registry/wrapper.py:
                        RBAC's escalation checks); None: none
    begin_delete        the first delete of an object not being deleted yet, instead of the
                        generic one (CRDs: upstream's customresourcedefinition REST.Delete marks
                        the CRD and adds its cleanup finalizer); later deletes are generic
    strategic_merge     False: a strategic merge patch is a 415 (custom resources: no patch
                        strategies without Go types, as upstream)
    coerce              what decoding a body (or a patch result) does beyond the typed decode,
                        in the version it is sent in: obj -> the strict decoding errors
                        (`unknown field "spec.x"`) of the fields it dropped, reported per
                        fieldValidation (custom resources: the version's structural schema
                        prunes and defaults, upstream's schemaCoercingDecoder); None: nothing
    storage_codec       the served version's objects are stored in another form, converted
                        where they meet storage (registry/store.py, the handlers' reads:
                        handlers/common.served_kvs) so the write pipeline sees the request's
                        version; None: stored as served (or to_storage/from_storage)
    validates_served_version  the store validates with this definition's validate functions,
                        not the stored kind's (custom resources: each version's schema, on
                        the object in that version; upstream's strategy is per served version)
    """
    strategy: Strategy = field(default_factory=Strategy, compare=False)
    defaulter: Defaulter | None = field(default=None, compare=False)
    defaults_outside_spec: bool = field(default=False, compare=False)
    validate: Validate = field(default=no_errors, compare=False)
    validate_update: ValidateUpdate = field(default=meta_update, compare=False)
    validate_status_update: ValidateUpdate = field(default=meta_update, compare=False)
    validate_subresource_update: Mapping[str, ValidateUpdate] = field(default_factory=dict, compare=False)
    validate_with_spec_json: ValidateWithSpecJSON | None = field(default=None, compare=False)
    warnings: Warnings = field(default=no_warnings, compare=False)
    warnings_on_update: WarningsUpdate = field(default=no_update_warnings, compare=False)  # not /status
    columns: Callable[[], list[Column]] = field(default=default_columns, compare=False)
    printer: Printer = field(default=default_printer, compare=False)
    field_selectors: dict[str, FieldGetter] | None = field(default=None, compare=False)
    returns_deleted_object: bool = field(default=False, compare=False)
    openapi_delete_status: bool = field(default=False, compare=False)
    deprecation_warning: str = field(default="", compare=False)
    to_storage: Converter | None = field(default=None, compare=False)
    from_storage: Converter | None = field(default=None, compare=False)
    review: Review | None = field(default=None, compare=False)
    wrapper: StorageWrapper | None = field(default=None, compare=False)
    begin_delete: BeginDelete | None = field(default=None, compare=False)
    strategic_merge: bool = field(default=True, compare=False)
    coerce: Callable[[Obj], list[str]] | None = field(default=None, compare=False)
    validates_served_version: bool = field(default=False, compare=False)
    storage_codec: StorageCodec | None = field(default=None, compare=False)
