"""The in-process components' Event POSTs, served without the request's HTTP-shaped detour.

An in-process event recorder (client/tools/record EventSinkImpl over an InProcessTransport)
writes ~4,000 core/v1 Events in a rolling update of 1,000 pods, each one a POST to
/api/v1/namespaces/<ns>/events. `InProcessEventWriter.create` serves such a POST exactly as
APIServer.route_trusted -> route -> route_resource -> handlers.rest.create serve it (the same
authorization, admission, defaulting, validation, storage, response body and request metrics),
without what only the general path needs: building the request's path, query and headers and
parsing them back (the RequestInfo of a namespace's events POST is made once), the
dispatch on verb and resource, and the Response wrapping the stored object's encoding.

What it does not serve itself it hands to route_trusted as the transport would: an audited
server (audit/ wraps the whole request), an aggregator with remote backends, an Event without
a namespace (a 404 there), a server that does not serve core/v1 events.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ....api import errors
from ....client.transport import RawResponse
from ... import enablement, metrics
from ...authentication.user import UserInfo
from ...handlers.common import output_bytes, warning_headers
from ...objects import check_namespace_matches, check_type_meta
from ...request import Request, RequestInfo, Response
from .. import store
from ..registry import REGISTRY, resource_definition

if TYPE_CHECKING:
    from ...server import APIServer

log = logging.getLogger(__name__)

_PATH = "/api/v1/namespaces/{}/events"
# What ResourceClient.create sends with a typed Event (client/rest.py _validation): no fieldManager,
# no dryRun, and fieldValidation=Ignore (a typed object carries no unknown fields).
_QUERY = {"fieldValidation": "Ignore"}
_CONTENT_TYPE = "application/json"
_MAX_INFOS = 1024


class InProcessEventWriter:
    """POSTs core/v1 Events (as dicts, which the server takes over) as `user`; answers the
    response as the in-process transport does (status and body)."""

    __slots__ = ("api", "user", "headers", "_infos", "_ri", "_opts")

    def __init__(self, api: APIServer, user: UserInfo, user_agent: str) -> None:
        self.api, self.user = api, user
        self.headers = {"content-type": _CONTENT_TYPE, "user-agent": user_agent}
        self._infos: dict[str, tuple[str, RequestInfo]] = {}
        self._ri = REGISTRY.lookup("", "v1", "events")
        # handlers.common.write_options of every such request (nothing writes to it)
        self._opts = store.WriteOptions(user, False, "", user_agent, _QUERY["fieldValidation"])

    def _info(self, ns: str) -> tuple[str, RequestInfo]:
        """The path of POST /api/v1/namespaces/<ns>/events and its parse_request_info (which
        the server only reads)."""
        path_info = self._infos.get(ns)
        if path_info is None:
            if len(self._infos) >= _MAX_INFOS:
                self._infos.clear()
            path_info = self._infos[ns] = (_PATH.format(ns), RequestInfo(
                verb="create", api_prefix="api", version="v1", namespace=ns, resource="events",
                is_resource_request=True, parts=("api", "v1", "namespaces", ns, "events")))
        return path_info

    async def create(self, ns: str, obj: dict[str, Any]) -> RawResponse:
        """The status and body the in-process transport would answer."""
        return (await self.create_returning(ns, obj))[0]

    async def create_returning(self, ns: str, obj: dict[str, Any]) -> tuple[RawResponse, dict[str, Any] | None]:
        """create(), and the stored object when it was created here (None otherwise: the body
        is the answer), which its body encodes: a caller may convert it instead of decoding
        the body (the server's stored dict, which nobody may change)."""
        api, ri = self.api, self._ri
        path, info = self._info(ns) if ns else ("/api/v1/events", None)      # the latter: a 404, as the client's
        req = Request("POST", path, dict(_QUERY), dict(self.headers), b"", self.user, obj)
        agg = api.aggregator
        if (info is None or ri is None or api.audit is not None or (agg is not None and agg.backends)
                or not enablement.enabled("", "v1", "events")):
            resp = await api.route_trusted(req)
            assert isinstance(resp.body, bytes)
            return RawResponse(resp.status, resp.body), None
        stored: dict[str, Any] | None = None
        started = time.perf_counter()
        try:
            api.authorize(req, info)
            # handlers.rest.create with decode_object of an in-process body (no review, no
            # conversion to storage, no custom resource's coercion: a core/v1 Event)
            check_type_meta(obj, ri)            # (the query's fieldValidation, Ignore, is valid)
            check_namespace_matches(obj, ns, ri)
            warnings: list[str] = []
            created, value = await store.create(api, self._opts, ri, ns, obj, warnings)
            resp = Response(201, output_bytes(ri, created, value), headers=warning_headers(warnings) if warnings else [])
            stored = created
        except errors.StatusError as e:
            from ...server import status_response
            resp = status_response(e)
        except Exception as e:                      # a bug: as route_trusted answers it
            log.exception("internal error serving %s %s", req.method, req.path)
            from ...server import status_response
            resp = status_response(errors.InternalError(repr(e)))
        metrics.monitor_request(req, info, resp, time.perf_counter() - started)
        body = resp.body
        assert isinstance(body, bytes)
        return RawResponse(resp.status, body), stored


def checks_hold() -> bool:
    """Whether core/v1 events are the plain resource this writer assumes (for the tests):
    no review, no storage conversion, no wrapper."""
    d = resource_definition(REGISTRY.lookup("", "v1", "events"))   # type: ignore[arg-type]
    return (d.review is None and d.to_storage is None and d.storage_codec is None and d.wrapper is None
            and not d.deprecation_warning and "create" in d.verbs and d.namespaced)
