"""APIServices, and the Local APIService of every served group/version created at start.

Upstream: kube-aggregator pkg/registry/apiservice (strategy.go: status cleared on create, kept
on update), pkg/controllers/autoregister (the onstart registrations the kube-apiserver makes
for every group/version it serves, apiServicesToRegister and the priorities table in
pkg/controlplane/apiserver/aggregator.go) and the availability controller's verdict on a local
APIService (Available True, reason Local). Proxying to a non-local APIService is not served.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from ....api import errors
from ....api.defaulting import apiregistration as defaulting
from ....api.resources import STATUS
from ....api.validation import apiregistration as validation
from ...authentication.user import APISERVER
from ...tables import apiregistration as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy

if TYPE_CHECKING:
    from ...server import APIServer

GROUP = "apiregistration.k8s.io"
AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"

# (group, version) -> (groupPriorityMinimum, versionPriority). Upstream: DefaultGenericAPIServicePriorities
# and the kube-apiserver's additions (pkg/controlplane/apiserver/aggregator.go, pkg/controlplane/aggregator.go).
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("autoscaling", "v1"): (17500, 15),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("resource.k8s.io", "v1"): (15900, 15),
    ("storagemigration.k8s.io", "v1"): (15800, 15),
}
DEFAULT_PRIORITY = (1000, 15)       # a group missing above (kubeplane serves nothing else upstream lacks)


class APIServiceStrategy(Strategy):
    has_status = True


API_SERVICES = register(ResourceDefinition(
    GROUP, "v1", "APIService", "apiservices", "apiservice", False,
    "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
    categories=("api-extensions",), subresources=(STATUS("APIService"),),
    strategy=APIServiceStrategy(),
    defaulter=defaulting.set_defaults_api_service,
    validate=validation.validate_api_service, validate_update=validation.validate_api_service_update,
    validate_status_update=validation.validate_api_service_status_update,
    columns=tables.api_service_columns, printer=tables.print_api_service,
))


def local_api_service(group: str, version: str) -> dict:
    """Upstream: makeAPIService, with the autoregister controller's onstart label."""
    gpm, vp = PRIORITIES.get((group, version), DEFAULT_PRIORITY)
    spec: dict = {"version": version, "groupPriorityMinimum": gpm, "versionPriority": vp}
    if group:
        spec["group"] = group
    return {"apiVersion": f"{GROUP}/v1", "kind": "APIService",
            "metadata": {"name": f"{version}.{group}", "labels": {AUTOMANAGED_LABEL: "onstart"}},
            "spec": spec}


async def autoregister(api: APIServer) -> None:
    """Create the Local APIService of every served group/version that has none, delete the
    onstart ones of versions no longer served (--runtime-config turned them off), and mark every
    local APIService Available (upstream: autoregister + the availability controller)."""
    from ... import enablement
    from .. import store

    await _remove_unserved(api, set(enablement.group_versions()))
    from ...metricsapi import AVAILABLE, GROUP as METRICS, api_service as metrics_api_service
    for group, version in enablement.group_versions():    # served ones only (--runtime-config)
        metrics = group == METRICS                         # as metrics-server registers it
        obj = metrics_api_service() if metrics else local_api_service(group, version)
        name = obj["metadata"]["name"]
        kv = await api.storage.get(API_SERVICES.key("", name))
        if kv is None:
            try:
                stored, _ = await store.create(api, store.WriteOptions(), API_SERVICES, "", obj, [])
            except errors.AlreadyExists:
                continue
        else:
            stored = kv.obj
        if ((stored.get("spec") or {}).get("service") is None or metrics) and tables.available(stored) != "True":
            new = copy.deepcopy(stored)
            new["status"] = {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": api.now(),
                                             "reason": "Local", "message": "Local APIServices are always available"}]}
            if metrics:
                new["status"]["conditions"][0].update(AVAILABLE)
            await store.update(api, store.WriteOptions(), API_SERVICES, new, stored,
                               int(stored["metadata"]["resourceVersion"]), "status", [])


async def _remove_unserved(api: APIServer, served: set[tuple[str, str]]) -> None:
    """Delete the onstart-managed local APIServices whose group/version is not served. Upstream:
    autoRegisterController.checkAPIService (an automanaged onstart APIService that is no longer
    desired is removed when the server starts)."""
    from ..deletion import DeleteOptions, delete

    kvs, _ = await api.storage.list(API_SERVICES.prefix)
    for kv in kvs:
        obj = kv.obj
        spec = obj.get("spec") or {}
        managed = (obj["metadata"].get("labels") or {}).get(AUTOMANAGED_LABEL) == "onstart"
        if managed and spec.get("service") is None and (spec.get("group", ""), spec.get("version", "")) not in served:
            try:
                await delete(api, APISERVER, API_SERVICES, kv, DeleteOptions())
            except errors.NotFound:
                pass
