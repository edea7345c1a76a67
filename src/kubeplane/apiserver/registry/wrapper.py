"""StorageWrapper: what a kind adds around the generic store's create and update.

Upstream, a few kinds serve a REST storage that embeds their genericregistry.Store and
overrides Create and Update (RBAC's policybased storages refuse privilege escalation there):
the override runs after mutating admission, since the handler admits before calling the
storage, and before the store's BeforeCreate/BeforeUpdate (strategy, validation) and validating
admission. An update's check runs inside the updated-object function (rest.WrapUpdatedObjectInfo),
so it sees the new object and the stored one.

Here the kind's ResourceDefinition names its wrapper (`wrapper=`) and the generic store
(registry/store.py) calls it at those two points; a wrapper refuses a write by raising an
api.errors StatusError, and nothing is written.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...api.resources import ResourceInfo
    from ..server import APIServer
    from .store import WriteOptions

Obj = dict[str, Any]


class StorageWrapper:
    """The hooks (each does nothing here). `ns` and `name` are the request's (its URL's):
    `name` is "" for a POST to the collection, as upstream's RequestInfo.Name."""

    async def before_create(self, api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, name: str,
                            obj: Obj) -> None:
        """Upstream: the wrapping storage's Create, before the wrapped Store.Create. Also a
        create through an update (PUT or apply of an absent object, where the strategy allows it)."""

    async def before_update(self, api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, name: str,
                            new: Obj, old: Obj) -> None:
        """Upstream: the wrapping storage's Update, in the updated-object function it wraps
        around the request's (new is the admitted object, old the stored one)."""
