"""POST pods/<name>/eviction: decode the policy/v1 (or v1beta1) Eviction, admit it (CREATE of
pods/eviction, kind Eviction) and evict (registry/core/eviction.py, upstream's EvictionREST).

Answers 201 with a Success Status; a refused eviction is the registry's 429 (with Retry-After
when the budget is still being processed), 404 for a missing pod.
Upstream: createHandler (apiserver handlers/create.go) over EvictionREST.Create.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from ...api import errors
from ...api.resources import ResourceInfo
from .. import admission, codec, objects
from ..registry import store
from ..registry.core import eviction
from ..request import Request, Response
from . import common

if TYPE_CHECKING:
    from ..server import APIServer

EVICTION = "io.k8s.api.policy.v1.Eviction"
EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")      # upstream: AcceptsGroupVersion


async def create_eviction(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    """Upstream: createHandler -> EvictionREST.Create."""
    body, warnings = codec.decode_typed(req.headers, req.body, EVICTION, "Eviction", "v1",
                                        common.field_validation(req))
    if not isinstance(body.get("metadata"), dict):
        body["metadata"] = {}
    version = body.get("apiVersion")
    if version and version not in EVICTION_VERSIONS:
        raise errors.BadRequest(f"the API version in the data ({version}) does not match the expected API "
                                "version (policy/v1)")
    objects.check_namespace_matches(body, ns, ri)
    opts = common.write_options(req)
    attrs = store.attributes(opts, ri, admission.CREATE, ns, name, body, None, "eviction", "Eviction",
                             warnings=warnings)
    await api.admission.admit(attrs)
    status = await eviction.create(api, opts, ri, ns, name, body, attrs)
    return Response(201, orjson.dumps(status), headers=common.warning_headers(warnings))
