"""The bootstrap controller: the `default/kubernetes` Service and its Endpoints, and the
Service IP and port repair loops.

Upstream: pkg/controlplane/controller/kubernetesservice/controller.go (UpdateKubernetesService:
the Service is created when missing — ClusterIP the first IP of --service-cluster-ip-range,
port 443 named "https" to the API server's port — and the endpoint reconciler keeps the
Endpoints naming every live API server, every --endpoint-reconciler-interval, 10 s:
reconcilers.py), with the repair controllers' RunOnce before the server is ready
(ipallocator/portallocator controller). Stopping, it takes this server out of the Endpoints
(Controller.Stop: RemoveEndpoints).

The Endpoints and the EndpointSlice are written straight to storage under their resources'
keys (upstream's endpoint reconciler writes them without admission too). (Upstream's Endpoints
key is /registry/services/endpoints/...; here Services are stored under
/registry/services/<namespace>/, without upstream's specs/ level, so that key would fall inside
the Services' list.)
"""
from __future__ import annotations

import asyncio
import ipaddress
import itertools
import logging
from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors
from ...api.resources import lookup
from ...storage import KeyExists
from ...utils.clock import rfc3339
from ..objects import new_uid
from ..registry.core.endpoints import ENDPOINTS
from ..registry.core.service.repair import REPAIR_INTERVAL, Problem, Repair
from ..registry.core.service.strategy import SERVICES
from ..registry.discovery.endpointslice import ENDPOINT_SLICES
from .reconcilers import LeaseEndpointReconciler, NoneEndpointReconciler, StorageLeases

if TYPE_CHECKING:
    from ..server import APIServer

log = logging.getLogger(__name__)

Obj = dict[str, Any]
KUBERNETES_SERVICE_NAME = "kubernetes"
SERVICE_PORT = 443
ENDPOINT_INTERVAL = 10.0        # --endpoint-reconciler-interval
STOP_TIMEOUT = 5.0              # seconds to take this server out of the endpoints when stopping
ENDPOINTS_KEY = ENDPOINTS.key("default", KUBERNETES_SERVICE_NAME)
ENDPOINT_SLICE_KEY = ENDPOINT_SLICES.key("default", KUBERNETES_SERVICE_NAME)
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
_event_seq = itertools.count()


def public_ip(server_address: str) -> str:
    """The address the Endpoints name: the API server's own host (loopback when it only
    listens there, which is where every component of `kubeplane up` reaches it)."""
    host = server_address.rsplit(":", 1)[0].strip("[]")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return "127.0.0.1"


def kubernetes_service(service_ip: str, target_port: int) -> Obj:
    """Upstream: CreateOrUpdateMasterServiceIfNeeded's Service (createPortAndServiceSpec)."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": KUBERNETES_SERVICE_NAME, "namespace": "default",
                         "labels": {"provider": "kubernetes", "component": "apiserver"}},
            "spec": {"ports": [{"name": "https", "protocol": "TCP", "port": SERVICE_PORT, "targetPort": target_port}],
                     "clusterIP": service_ip, "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                     "type": "ClusterIP"}}


def kubernetes_endpoints(ips: list[str], port: int) -> Obj:
    """Upstream: the lease endpoint reconciler's Endpoints (skip-mirror: it writes the slice itself)."""
    return {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": KUBERNETES_SERVICE_NAME, "namespace": "default", "labels": {SKIP_MIRROR: "true"}},
            "subsets": [{"addresses": [{"ip": ip} for ip in ips],
                         "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}


def kubernetes_endpoint_slice(ips: list[str], port: int) -> Obj:
    """Upstream: EndpointsAdapter's slice for the kubernetes Service (the Endpoints' family)."""
    family = "IPv6" if ":" in ips[0] else "IPv4"
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": KUBERNETES_SERVICE_NAME, "namespace": "default",
                         "labels": {"kubernetes.io/service-name": KUBERNETES_SERVICE_NAME}},
            "addressType": family,
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}
                          for ip in ips if (":" in ip) == (family == "IPv6")],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}


class KubernetesServiceController:
    """Upstream: kubernetesservice.Controller with one API server's endpoint reconciler."""

    def __init__(self, api: APIServer, *, interval: float = ENDPOINT_INTERVAL, reconciler: str = "lease") -> None:
        self.api = api
        self.interval = interval
        self.endpoints: LeaseEndpointReconciler | NoneEndpointReconciler = (
            NoneEndpointReconciler() if reconciler == "none"
            else LeaseEndpointReconciler(StorageLeases(api), self.write_endpoints))

    def address(self) -> tuple[str, int]:
        """This server's IP and port, as the endpoints name them."""
        return public_ip(self.api.server_address), int(self.api.server_address.rsplit(":", 1)[1])

    async def write_endpoints(self, ips: list[str], port: int) -> None:
        await reconcile_object(self.api, ENDPOINTS_KEY, kubernetes_endpoints(ips, port))
        await reconcile_object(self.api, ENDPOINT_SLICE_KEY, kubernetes_endpoint_slice(ips, port))

    @property
    def service_ip(self) -> str:
        """The first IP of the primary service range (10.96.0.1 for 10.96.0.0/12)."""
        assert self.api.service_alloc is not None
        return str(self.api.service_alloc.primary.cidr.network_address + 1)

    async def update_kubernetes_service(self) -> None:
        """Upstream: UpdateKubernetesService — create the Service if missing, then reconcile
        the Endpoints (and EndpointSlice) to the live API servers' addresses and this one's port."""
        host, port = self.address()
        if await self.api.storage.get(SERVICES.key("default", KUBERNETES_SERVICE_NAME)) is None:
            from ..registry import store
            try:
                await store.create(self.api, store.WriteOptions(), SERVICES, "default",
                                   kubernetes_service(self.service_ip, port), [])
            except errors.StatusError:
                # created meanwhile, by another API server (whose ClusterIP 10.96.0.1 this one's
                # create then finds allocated: Invalid): fine; anything else is an error
                if await self.api.storage.get(SERVICES.key("default", KUBERNETES_SERVICE_NAME)) is None:
                    raise
        await self.endpoints.reconcile_endpoints(host, port)

    async def run(self) -> None:
        """Reconcile every interval until cancelled; a failure is logged and retried. Cancelled,
        it takes this server out of the endpoints first (bounded: storage may be gone)."""
        try:
            while True:
                await self.api.clock.sleep(self.interval)
                try:
                    await self.update_kubernetes_service()
                except Exception as err:
                    log.error("unable to sync kubernetes service: %s", err)
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Upstream: Controller.Stop — RemoveEndpoints, given STOP_TIMEOUT."""
        try:
            await asyncio.wait_for(self.endpoints.remove_endpoints(*self.address()), STOP_TIMEOUT)
        except Exception as err:           # storage gone, timed out: the lease expires by itself
            log.warning("unable to remove endpoints from kubernetes service: %s", err)


async def reconcile_object(api: APIServer, key: str, want: Obj) -> None:
    """Write want at key unless the stored object already says the same (labels, subsets,
    endpoints, ports): an unchanged object is not rewritten, so watchers see nothing."""
    kv = await api.storage.get(key)
    if kv is not None and all(kv.obj.get(k) == v for k, v in want.items() if k != "metadata") \
            and kv.obj["metadata"].get("labels") == want["metadata"]["labels"]:
        return
    obj = orjson.loads(orjson.dumps(want))
    if kv is None:
        obj["metadata"].update(uid=new_uid(), creationTimestamp=api.now())
        try:
            await api.storage.create(key, obj)
        except Exception as err:         # created meanwhile: the next round compares again
            log.debug("create %s: %s", key, err)
        return
    meta = kv.obj["metadata"]
    obj["metadata"].update(uid=meta.get("uid"), creationTimestamp=meta.get("creationTimestamp"))
    await api.storage.update(key, obj, kv.mod_revision)


# --- repair ----------------------------------------------------------------------------------

async def repair_services(api: APIServer, repair: Repair, *, attempts: int = 5) -> list[Problem]:
    """Upstream: Repair.RunOnce (RetryOnConflict) — list every Service and rebuild the
    allocations from them, again if an allocation changed while the list was read; the
    problems found become Warning Events on their Services."""
    shared = repair.alloc.shared
    for _ in range(attempts):
        stored, port_revision = await shared.load() if shared is not None else ({}, 0)
        before = repair.changes()
        kvs, _ = await api.storage.list(SERVICES.prefix)
        if repair.changes() == before:
            problems = repair.run_once([kv.obj for kv in kvs])
            if shared is not None and not await shared.publish(stored, port_revision, [kv.obj for kv in kvs]):
                continue            # another API server changed the node ports meanwhile
            for p in problems:
                log.warning("%s: %s/%s: %s", p.reason, p.svc["metadata"].get("namespace"),
                            p.svc["metadata"].get("name"), p.message)
                await record_event(api, p)
            return problems
    log.warning("service allocation repair: allocations kept changing; trying again later")
    return []


async def record_event(api: APIServer, p: Problem) -> None:
    """A Warning Event on the Service (upstream: the repair controllers' event recorder)."""
    meta, now = p.svc["metadata"], api.clock.now()
    ns, name = meta.get("namespace") or "default", meta.get("name", "")
    event = {"apiVersion": "v1", "kind": "Event",
             # upstream: generateEventName, "<name>.<UnixNano in hex>"; + a count, for a clock that stands still
             "metadata": {"name": f"{name}.{int(now * 1e9) + next(_event_seq):x}", "namespace": ns},
             "involvedObject": {"kind": "Service", "namespace": ns, "name": name, "uid": meta.get("uid", ""),
                                "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion", "")},
             "reason": p.reason, "message": p.message, "type": "Warning", "count": 1,
             "firstTimestamp": rfc3339(now), "lastTimestamp": rfc3339(now),
             "source": {"component": p.component}, "reportingComponent": p.component, "reportingInstance": ""}
    ri = lookup("", "v1", "events")
    if ri is None:
        return
    from ..registry import store
    try:
        await store.create(api, store.WriteOptions(), ri, ns, event, [])
    except errors.StatusError as err:      # e.g. the namespace is being deleted
        log.debug("event for %s/%s not recorded: %s", ns, name, err.message)


async def run_repair_loop(api: APIServer, repair: Repair, interval: float = REPAIR_INTERVAL) -> None:
    while True:
        await api.clock.sleep(interval)
        try:
            await repair_services(api, repair)
        except Exception as err:
            log.error("service allocation repair failed: %s", err)


DEFAULT_SERVICE_CIDR_NAME = "kubernetes"


async def ensure_default_service_cidr(api: APIServer) -> None:
    """The ServiceCIDR `kubernetes` naming --service-cluster-ip-range, Ready, created when
    missing (straight to storage: API servers starting together race, the first one wins).
    Upstream: the kubernetes-service-cidr-controller (pkg/controlplane/controller/
    defaultservicecidr: DefaultServiceCIDRName, its Ready condition without a reason)."""
    from .. import enablement
    from ..registry.networking.servicecidr import SERVICE_CIDRS
    if api.service_alloc is None or not enablement.enabled("networking.k8s.io", "v1", "servicecidrs"):
        return
    key = SERVICE_CIDRS.key("", DEFAULT_SERVICE_CIDR_NAME)
    if await api.storage.get(key) is not None:
        return
    now = api.now()
    obj = {"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
           "metadata": {"name": DEFAULT_SERVICE_CIDR_NAME, "uid": new_uid(), "creationTimestamp": now},
           "spec": {"cidrs": [str(r.cidr) for r in api.service_alloc.by_family.values()]},
           "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now,
                                      "message": "Kubernetes default Service CIDR is ready"}]}}
    try:
        await api.storage.create(key, obj)
    except KeyExists:
        pass


async def start_controllers(api: APIServer, reconciler: str = "lease") -> list[asyncio.Future[None]]:
    """Create or reconcile the kubernetes Service now (before the ready line), then keep the
    Endpoints, the allocations and the legacy token tracking ConfigMap reconciled in the
    background; the caller cancels the tasks. reconciler: --endpoint-reconciler-type."""
    controller = KubernetesServiceController(api, reconciler=reconciler)
    await ensure_default_service_cidr(api)
    try:
        await controller.update_kubernetes_service()
    except errors.StatusError as err:
        log.error("unable to sync kubernetes service: %s", err.message)
    from . import legacytokentracking
    tasks: list[asyncio.Future[None]] = [asyncio.ensure_future(controller.run()),
                                         asyncio.ensure_future(legacytokentracking.run(api))]
    if api.service_repair is not None:
        tasks.append(asyncio.ensure_future(run_repair_loop(api, api.service_repair)))
    return tasks
