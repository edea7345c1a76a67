"""GET and LIST of componentstatuses: the health of the control plane's parts, probed per
request and never stored.

Upstream: pkg/registry/core/componentstatus (rest.go: REST.Get/List, getComponentStatus,
ToConditionStatus) probes the scheduler's and controller-manager's /healthz and each etcd
server. kubeplane runs those components in process: "scheduler" and "controller-manager"
answer with the API server's named health check of the same name (cmd/up.py adds one per
supervised component: healthy while running, the crash otherwise), and "etcd-0" with a read
of the storage. A component that is not running in this process (`--no-controllers`, a
standalone server) is Unhealthy, as upstream's failed probe is. Upstream answers an unknown
name with a plain error (500 "Component not found: x"); we answer 404 NotFound instead.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors
from ...api.resources import ResourceInfo
from .. import codec
from ..request import Request, Response
from . import common

if TYPE_CHECKING:
    from ..server import APIServer

Obj = dict[str, Any]

# Upstream's names, in the order `kubectl get cs` usually shows them.
COMPONENTS = ("scheduler", "controller-manager", "etcd-0")
NOT_RUNNING = "the component is not running in this kubeplane process"


def _status(name: str, healthy: bool, error: str) -> Obj:
    condition = {"type": "Healthy", "status": "True" if healthy else "False",
                 "message": "ok" if healthy else "", "error": error}
    if not error:
        del condition["error"]
    if not condition["message"]:
        del condition["message"]
    return {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
            "conditions": [condition]}


async def _probe(api: APIServer, name: str) -> Obj:
    if name == "etcd-0":
        try:
            await api.storage.get("/registry/namespaces/default")
        except Exception as e:           # the storage is what is being probed
            return _status(name, False, repr(e))
        return _status(name, True, "")
    check = next((c for c in api.health.checks["healthz"] if c.name == name), None)
    if check is None:
        return _status(name, False, NOT_RUNNING)
    err = check.check()
    return _status(name, err is None, "" if err is None else str(err))


async def get(api: APIServer, req: Request, ri: ResourceInfo, name: str) -> Response:
    if name not in COMPONENTS:
        raise errors.NotFound(ri.group, ri.plural, name)
    obj = await _probe(api, name)
    return common.object_response(api, req, ri, obj, None)


async def list_(api: APIServer, req: Request, ri: ResourceInfo) -> Response:
    """Upstream: REST.List — every component probed, then the label/field selectors applied."""
    sel = common.Selectors.from_request(req, ri)
    items = [obj for name in COMPONENTS if sel.matches(obj := await _probe(api, name))]
    if codec.wants_table(req.headers):
        return common.table_response(api, req, ri, items, None, "")
    body = {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}
    return Response(200, orjson.dumps(body))
