"""Create-only kinds that are answered, not stored: TokenReview, SelfSubjectReview and the
authorization reviews.

Upstream: their REST storages (pkg/registry/authentication/*, pkg/registry/authorization/*)
implement only rest.Creater: the create handler decodes, admits and validates the object, the
storage fills its status and returns it (201 Created) without writing anything.
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from ...api import errors
from ...api.resources import ResourceInfo
from .. import admission, objects
from ..request import Request, Response
from .strategy import Obj

if TYPE_CHECKING:
    from ..server import APIServer


async def create(api: APIServer, req: Request, ri: ResourceInfo, ns: str, obj: Obj,
                 warnings: list[str]) -> Response:
    """Validate, admit and answer a review; nothing is stored (dry run or not)."""
    from ..handlers import common
    from . import resource_definition, scheme, store
    d = resource_definition(ri)
    assert d.review is not None
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise errors.BadRequest("metadata must be an object")
    if meta is None:
        meta = obj["metadata"] = {}
    objects.check_namespace_matches(obj, ns, ri)
    scheme.set_defaults(obj)
    attrs = store.attributes(common.write_options(req), ri, admission.CREATE, ns, meta.get("name", ""), obj,
                             warnings=warnings)
    await api.admission.admit(attrs)
    errs = scheme.validate(obj)
    if errs:
        raise errors.Invalid(ri.group, ri.kind, "", errs)
    await api.admission.validate(attrs)
    answer = d.review(api, req, obj)
    if inspect.isawaitable(answer):          # TokenReview authenticates through storage
        answer = await answer
    answer.setdefault("metadata", {})          # a null creationTimestamp is omitted (omitzero)
    return common.object_response(api, req, ri, answer, None, status=201, warnings=warnings)
