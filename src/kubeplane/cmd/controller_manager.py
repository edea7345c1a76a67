"""`kubeplane controller-manager`: the controllers, with their own workers, on shared informers.

    kubeplane controller-manager --kubeconfig KC [--secure-port 10257] [--bind-address 127.0.0.1]

It serves /healthz, /livez and /readyz (leaderElection, then one check per controller once
leading, as upstream's NamedPingChecker) and /metrics over HTTPS (serving.py).

Upstream: cmd/kube-controller-manager. `kubeplane up` runs the same controllers inside its own
process over the in-process transport (no sockets, no TLS); this command runs them in a process
of their own against any API server from a kubeconfig. The code is the same either way.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable

from ..client.clientset import Clientset
from ..client.informers import SharedInformerFactory
from ..utils.clock import REAL_CLOCK, Clock
from ..utils.healthz import ENDPOINTS, NamedCheck
from .standalone import add_component_parser, run_component

log = logging.getLogger(__name__)

SECURE_PORT = 10257          # upstream: ports.KubeControllerManagerPort
# The controllers run_controllers starts, by upstream's names (names.go), for their health checks.
CONTROLLERS = ("deployment-controller", "replicaset-controller", "garbage-collector-controller",
               "namespace-controller", "node-lifecycle-controller", "serviceaccount-controller",
               "root-ca-certificate-publisher-controller", "resourcequota-controller", "disruption-controller")


@dataclass(frozen=True)
class ControllerManagerOptions:
    replicaset_workers: int = 5          # --concurrent-replicaset-syncs
    gc_workers: int = 20                 # --concurrent-gc-syncs
    namespace_workers: int = 10          # --concurrent-namespace-syncs
    deployment_workers: int = 5          # --concurrent-deployment-syncs
    node_monitor_grace_period: float = 40.0   # --node-monitor-grace-period (seconds)
    # --root-ca-file's content (upstream's default: the CA of the client's kubeconfig): what the
    # root CA publisher puts in every namespace's kube-root-ca.crt; empty, no publisher.
    root_ca: bytes = b""
    resource_quota_workers: int = 5           # --concurrent-resource-quota-syncs
    resource_quota_sync_period: float = 300.0  # --resource-quota-sync-period (seconds)


async def run_controllers(clientset: Clientset, *, clock: Clock = REAL_CLOCK,
                          options: ControllerManagerOptions = ControllerManagerOptions(),
                          factory: SharedInformerFactory | None = None,
                          client_for: Callable[[str], Clientset] | None = None) -> None:
    """Build every controller on one informer factory (`factory`, which its owner stops, or
    one of their own), start them, and run until cancelled.

    `client_for(name)`: the clientset of the controller whose service account is `name`
    (upstream's --use-service-account-credentials); otherwise every controller uses clientset.
    """
    cs: Callable[[str], Clientset] = client_for or (lambda name: clientset)
    from ..client.tools.record import EventBroadcaster
    from ..controller.certificates.rootcacertpublisher import Publisher
    from ..controller.deployment import DeploymentController
    from ..controller.garbagecollector import GarbageCollector
    from ..controller.namespace import NamespaceController
    from ..controller.nodelifecycle import NodeLifecycleController, NodeLifecycleOptions
    from ..controller.replicaset import ReplicaSetController
    from ..controller.serviceaccount import ServiceAccountsController

    owns_factory = factory is None
    factory = factory or SharedInformerFactory(clientset, clock=clock)
    broadcaster = EventBroadcaster(clientset, clock=clock)
    rs = ReplicaSetController(factory.apps_v1().replicasets(), factory.core_v1().pods(), cs("replicaset-controller"), clock=clock,
                              recorder=broadcaster.new_recorder("replicaset-controller"))
    gc = GarbageCollector(cs("generic-garbage-collector"), factory, clock=clock, workers=options.gc_workers)
    ns = NamespaceController(cs("namespace-controller"), factory.core_v1().namespaces(), clock=clock,
                             workers=options.namespace_workers)
    nodes = NodeLifecycleController(factory.core_v1().nodes(), factory.core_v1().pods(),
                                    factory.coordination_v1().leases(), cs("node-controller"), clock=clock,
                                    recorder=broadcaster.new_recorder("node-controller"),
                                    options=NodeLifecycleOptions(
                                        node_monitor_grace_period=options.node_monitor_grace_period))
    deployment = DeploymentController(factory.apps_v1().deployments(), factory.apps_v1().replicasets(),
                                      factory.core_v1().pods(), cs("deployment-controller"), clock=clock,
                                      recorder=broadcaster.new_recorder("deployment-controller"))
    sa = ServiceAccountsController(cs("service-account-controller"), factory.core_v1().serviceaccounts(), factory.core_v1().namespaces(),
                                   clock=clock)
    # A controller whose resources the API server does not serve (--runtime-config) is not
    # started, as upstream's kube-controller-manager skips it ("resource unavailable").
    runs = [gc.run(), ns.run(), sa.run()]
    if _serves("apps", "v1", "deployments", "replicasets"):
        runs[:0] = [deployment.run(options.deployment_workers), rs.run(options.replicaset_workers)]
    if _serves("coordination.k8s.io", "v1", "leases"):
        runs.append(nodes.run())
    if _serves("policy", "v1", "poddisruptionbudgets") and _serves("apps", "v1", "replicasets", "deployments",
                                                                    "statefulsets"):
        from ..controller.disruption import DisruptionController
        disruption = DisruptionController(factory.core_v1().pods(), factory.policy_v1().poddisruptionbudgets(),
                                          factory.core_v1().replicationcontrollers(), factory.apps_v1().replicasets(),
                                          factory.apps_v1().deployments(), factory.apps_v1().statefulsets(),
                                          cs("disruption-controller"), clock=clock,
                                          recorder=broadcaster.new_recorder("controllermanager"))
        runs.append(disruption.run())
    if options.root_ca:
        runs.append(Publisher(cs("root-ca-cert-publisher"), factory.core_v1().configmaps(), factory.core_v1().namespaces(),
                              root_ca=options.root_ca, clock=clock).run())
    runs += _resource_quota_controller(cs("resourcequota-controller"), factory, clock, options)
    if _serves("rbac.authorization.k8s.io", "v1", "clusterroles"):
        from ..controller.clusterroleaggregation import ClusterRoleAggregationController
        runs.append(ClusterRoleAggregationController(factory.rbac_v1().clusterroles(),
                                                     cs("clusterrole-aggregation-controller"), clock=clock).run())
    if _serves("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"):   # issue 12, helper cel2
        from ..controller import validatingadmissionpolicystatus as vapstatus
        runs.append(vapstatus.Controller(factory.admissionregistration_v1().validatingadmissionpolicies(),
                                         cs(vapstatus.CONTROLLER_NAME), _type_check, clock=clock).run())
    broadcaster.start()
    try:
        async with asyncio.TaskGroup() as tg:
            for coro in runs:
                tg.create_task(coro)
            factory.start()                  # every informer the controllers asked for above
    finally:
        if owns_factory:
            await factory.shutdown()
        await broadcaster.shutdown()


def _type_check(policy: dict[str, Any]) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy type checker (the CEL engine loads with the first policy)."""
    from ..apiserver.cel import typechecking
    return typechecking.check(policy)


def _serves(group: str, version: str, *plurals: str) -> bool:
    from ..api.resources import served_resources
    served = {(r.group, r.version, r.plural) for r in served_resources()}
    return all((group, version, p) in served for p in plurals)


def _resource_quota_controller(clientset: Clientset, factory: SharedInformerFactory, clock: Clock,
                               options: ControllerManagerOptions) -> list[Any]:
    """The resource quota controller, once ResourceQuota is a served kind (until then there are
    no quotas it could read or write; the admission plugin enforces stored ones)."""
    from ..controller.resourcequota import ResourceQuotaController, ResourceQuotaControllerOptions, served
    if served("", "resourcequotas") is None:
        return []
    rq = ResourceQuotaController(factory.informer_for("", "v1", "resourcequotas"), factory, clientset, clock=clock,
                                 options=ResourceQuotaControllerOptions(
                                     workers=options.resource_quota_workers,
                                     resync_period=options.resource_quota_sync_period))
    return [rq.run()]


def add_parser(sub: Any) -> None:
    add_component_parser(sub, "controller-manager", "run the controllers against an API server",
                         "kube-controller-manager", run, secure_port=SECURE_PORT)


def _ok() -> Exception | None:
    return None


def run(args: argparse.Namespace) -> int:
    from .serving import HealthChecks, LeaderHealthzAdaptor

    health = HealthChecks()
    watchdog = LeaderHealthzAdaptor() if args.leader_elect else None
    if watchdog is not None:
        health.add(ENDPOINTS, watchdog.named_check())

    async def lead(cs: Clientset) -> None:
        """Upstream: StartControllers adds each started controller's check to /healthz."""
        options = ControllerManagerOptions(root_ca=kubeconfig_root_ca(args.kubeconfig))
        started = [n for n in CONTROLLERS if options.root_ca or n != "root-ca-certificate-publisher-controller"]
        health.add(ENDPOINTS, *(NamedCheck(name, _ok) for name in started))
        await run_controllers(cs, options=options)

    return run_component(args, user_agent="kube-controller-manager", lease="kube-controller-manager", run=lead,
                         health=health, watchdog=watchdog)


def kubeconfig_root_ca(kubeconfig: Any) -> bytes:
    """The CA the kubeconfig trusts (certificate-authority-data, else the certificate-authority
    file), or b"". Upstream: the root CA publisher's default when --root-ca-file is not given."""
    import base64
    import pathlib

    from ..client.transport import load_kubeconfig
    cluster, _ = load_kubeconfig(kubeconfig)
    if cluster.get("certificate-authority-data"):
        return base64.b64decode(cluster["certificate-authority-data"])
    if cluster.get("certificate-authority"):       # relative to the kubeconfig, as kubectl reads it
        return (pathlib.Path(kubeconfig).parent / cluster["certificate-authority"]).read_bytes()
    return b""
