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
import pathlib
from dataclasses import dataclass
from typing import Any, Callable

from ..client.clientset import Clientset
from ..client.informers import SharedInformerFactory
from ..client.tools.cache.shared_informer import transform_strip_managed_fields
from ..utils.clock import REAL_CLOCK, Clock
from ..utils.healthz import ENDPOINTS, NamedCheck
from .errors import Fatal
from .standalone import add_component_parser, run_component

log = logging.getLogger(__name__)

SECURE_PORT = 10257          # upstream: ports.KubeControllerManagerPort
# The controllers run_controllers starts, by upstream's names (names.go), for their health checks.
CONTROLLERS = ("deployment-controller", "replicaset-controller", "garbage-collector-controller",
               "namespace-controller", "node-lifecycle-controller", "serviceaccount-controller",
               "root-ca-certificate-publisher-controller", "resourcequota-controller", "disruption-controller",
               "certificatesigningrequest-approving-controller", "certificatesigningrequest-signing-controller",
               "certificatesigningrequest-cleaner-controller", "legacy-serviceaccount-token-cleaner-controller",
               "serviceaccount-token-controller", "bootstrap-signer-controller", "token-cleaner-controller",
               "cronjob-controller", "statefulset-controller", "persistentvolume-binder-controller",
               "endpointslice-controller", "endpoints-controller", "endpointslice-mirroring-controller",
               "replicationcontroller-controller", "daemonset-controller",
               "job-controller", "ttl-after-finished-controller", "pod-garbage-collector-controller", "horizontal-pod-autoscaler-controller")
CSR_SIGNING = "certificatesigningrequest-signing-controller"
SA_TOKEN = "serviceaccount-token-controller"


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
    # --cluster-signing-cert-file / --cluster-signing-key-file's contents: the CA the CSR signing
    # controllers sign with (kubeadm: the cluster CA); empty, no signing controller.
    cluster_signing_cert: bytes = b""
    cluster_signing_key: bytes = b""
    cluster_signing_duration: float = 365 * 24 * 3600.0   # --cluster-signing-duration (8760h)
    # --service-account-private-key-file's key: what the tokens controller signs legacy token
    # Secrets with; None, no tokens controller.
    service_account_key: Any = None
    # --legacy-service-account-token-clean-up-period (8760h): how long a legacy token Secret
    # stays unused before it is labelled invalid, and then before it is deleted.
    legacy_token_clean_up_period: float = 365 * 24 * 3600.0
    max_endpoints_per_slice: int = 100        # --max-endpoints-per-slice
    job_workers: int = 5                      # --concurrent-job-syncs
    ttl_after_finished_workers: int = 5       # --concurrent-ttl-after-finished-syncs
    terminated_pod_gc_threshold: int = 12500  # --terminated-pod-gc-threshold (<= 0: no threshold GC)
    hpa_sync_period: float = 15.0                  # --horizontal-pod-autoscaler-sync-period
    hpa_downscale_stabilization: float = 300.0     # --horizontal-pod-autoscaler-downscale-stabilization
    hpa_tolerance: float = 0.1                     # --horizontal-pod-autoscaler-tolerance
    # The other --concurrent-*-syncs (CONCURRENCY_FLAGS): workers of each controller.
    rc_workers: int = 5                       # --concurrent-rc-syncs
    statefulset_workers: int = 5              # --concurrent-statefulset-syncs
    daemonset_workers: int = 2                # --concurrent-daemonset-syncs
    cron_job_workers: int = 5                 # --concurrent-cron-job-syncs
    endpoint_workers: int = 5                 # --concurrent-endpoint-syncs
    endpoint_slice_workers: int = 5           # --concurrent-service-endpoint-syncs
    mirroring_workers: int = 5                # --mirroring-concurrent-service-endpoint-syncs
    hpa_workers: int = 5                      # --concurrent-horizontal-pod-autoscaler-syncs
    sa_token_workers: int = 5                 # --concurrent-serviceaccount-token-syncs
    vap_status_workers: int = 5               # --concurrent-validating-admission-policy-status-syncs


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
    # Its own informers drop managedFields, which no controller reads. Upstream: informers.WithTransform(trim)
    # (cmd/kube-controller-manager/app/controllermanager.go, kubernetes#118455)
    factory = factory or SharedInformerFactory(clientset, clock=clock, transform=transform_strip_managed_fields)
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
    runs += _certificate_controllers(cs("certificate-controller"), factory, clock, options)
    runs += _bootstrap_token_controllers(cs, factory, clock)
    runs += _cronjob_controllers(cs("cronjob-controller"), factory, clock, broadcaster, options)   # issue 14
    runs += _statefulset_and_volume_controllers(cs, factory, clock, broadcaster, options)   # issue 14
    runs += _endpoint_and_workload_controllers(cs, factory, clock, options, broadcaster)
    runs += _batch_and_pod_gc_controllers(cs, factory, clock, broadcaster, options)
    runs += _podautoscaler_controllers(cs("horizontal-pod-autoscaler"), factory, clock, broadcaster, options)
    if options.service_account_key is not None:
        # upstream: the root client ("tokens-controller"), not a service account of its own
        from ..serviceaccount.legacy import LEGACY_ISSUER
        from ..controller.serviceaccount.tokens_controller import TokensController
        from ..serviceaccount.jwt import TokenGenerator
        runs.append(TokensController(clientset, factory.core_v1().serviceaccounts(), factory.core_v1().secrets(),
                                     TokenGenerator(LEGACY_ISSUER, options.service_account_key),
                                     root_ca=options.root_ca, clock=clock).run(options.sa_token_workers))
    from ..controller.serviceaccount.legacy_serviceaccount_token_cleaner import LegacySATokenCleaner
    runs.append(LegacySATokenCleaner(factory.core_v1().serviceaccounts(), factory.core_v1().secrets(),
                                     factory.core_v1().pods(), cs("legacy-service-account-token-cleaner"), clock=clock,
                                     clean_up_period=options.legacy_token_clean_up_period).run())
    if _serves("rbac.authorization.k8s.io", "v1", "clusterroles"):
        from ..controller.clusterroleaggregation import ClusterRoleAggregationController
        runs.append(ClusterRoleAggregationController(factory.rbac_v1().clusterroles(),
                                                     cs("clusterrole-aggregation-controller"), clock=clock).run())
    if _serves("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"):   # issue 12, helper cel2
        from ..controller import validatingadmissionpolicystatus as vapstatus
        runs.append(vapstatus.Controller(factory.admissionregistration_v1().validatingadmissionpolicies(),
                                         cs(vapstatus.CONTROLLER_NAME), _type_check, clock=clock).run(
                                             options.vap_status_workers))
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


def _certificate_controllers(clientset: Clientset, factory: SharedInformerFactory, clock: Clock,
                             options: ControllerManagerOptions) -> list[Any]:
    """csrapproving, csrcleaner, and csrsigning when given a CA (upstream starts it only with
    the signing files), all as the certificate-controller service account, 5 workers each."""
    if not _serves("certificates.k8s.io", "v1", "certificatesigningrequests"):
        return []
    from ..controller.certificates.approver import new_csr_approving_controller
    from ..controller.certificates.cleaner import CSRCleanerController
    csrs = factory.certificates_v1().certificatesigningrequests()
    runs = [new_csr_approving_controller(clientset, csrs, clock=clock).run(5),
            CSRCleanerController(clientset, csrs, clock=clock).run()]
    if options.cluster_signing_cert and options.cluster_signing_key:
        from ..controller.certificates.signer import load_ca, new_csr_signing_controllers
        ca = load_ca(options.cluster_signing_cert, options.cluster_signing_key)
        runs += [c.run(5) for c in new_csr_signing_controllers(clientset, csrs, ca,
                                                                cert_ttl=options.cluster_signing_duration, clock=clock)]
    return runs


def add_parser(sub: Any) -> None:
    from . import flags
    p = add_component_parser(sub, "controller-manager", "run the controllers against an API server",
                             "kube-controller-manager", run, secure_port=SECURE_PORT)
    p.add_argument("--cluster-signing-cert-file", type=pathlib.Path, default=None, metavar="FILE",
                   help="PEM CA certificate the CSR signing controllers issue cluster-scoped certificates with "
                        "(default: pki/ca.crt beside the --kubeconfig, when it is one `kubeplane up` wrote, as kubeadm "
                        "points it at the cluster CA; with no CA, no CSR is signed)")
    p.add_argument("--cluster-signing-key-file", type=pathlib.Path, default=None, metavar="FILE",
                   help="the PEM private key of --cluster-signing-cert-file (default: pki/ca.key beside the "
                        "--kubeconfig)")
    p.add_argument("--cluster-signing-duration", type=flags.go_duration, default=365 * 24 * 3600.0,
                   metavar="DURATION", help="the longest lifetime of a signed certificate (default 8760h0m0s)")
    p.add_argument("--legacy-service-account-token-clean-up-period", type=flags.go_duration,
                   default=365 * 24 * 3600.0, metavar="DURATION",
                   help="how long a legacy service account token Secret may go unused before it is labelled invalid, "
                        "and then before it is deleted (default 8760h0m0s)")
    p.add_argument("--service-account-private-key-file", type=pathlib.Path, default=None, metavar="FILE",
                   help="PEM private key the tokens controller signs legacy service account token Secrets with "
                        "(default: pki/sa.key beside the --kubeconfig, when it exists; none: no tokens controller)")
    p.add_argument("--max-endpoints-per-slice", type=_max_endpoints_per_slice, default=100,
                   help="the most endpoints the EndpointSlice controllers put in one slice (default 100)")
    p.add_argument("--terminated-pod-gc-threshold", type=int, default=12500, metavar="N",
                   help="finished pods kept before the pod garbage collector deletes the oldest "
                        "(<= 0: never; default 12500)")
    p.add_argument("--horizontal-pod-autoscaler-sync-period", type=flags.go_duration, default=15.0,
                   metavar="DURATION", help="the period for syncing the number of pods in horizontal pod autoscaler "
                                            "(default 15s)")
    p.add_argument("--horizontal-pod-autoscaler-downscale-stabilization", type=flags.go_duration, default=300.0,
                   metavar="DURATION", help="the period for which autoscaler will look backwards and not scale down "
                                            "below any recommendation it made during that period (default 5m0s)")
    p.add_argument("--horizontal-pod-autoscaler-tolerance", type=float, default=0.1, metavar="FLOAT",
                   help="the minimum change (from 1.0) in the desired-to-actual metrics ratio for the horizontal pod "
                        "autoscaler to consider scaling (default 0.1)")
    _add_concurrency_flags(p)
    p.add_argument("--use-service-account-credentials", action=argparse.BooleanOptionalAction, default=True,
                   help="each controller acts as its own kube-system service account, with tokens from the "
                        "TokenRequest API (default on, as kubeadm runs kube-controller-manager)")


def _max_endpoints_per_slice(text: str) -> int:
    """Upstream: EndpointSliceControllerOptions.Validate (1 to 1000)."""
    from . import flags
    n = flags.non_negative_int(text)
    if n < 1:
        raise argparse.ArgumentTypeError("--max-endpoints-per-slice must be at least 1")
    if n > 1000:
        raise argparse.ArgumentTypeError("--max-endpoints-per-slice must be less than or equal to 1000")
    return n


def _ok() -> Exception | None:
    return None


def run(args: argparse.Namespace) -> int:
    from .serving import HealthChecks, LeaderHealthzAdaptor

    health = HealthChecks()
    watchdog = LeaderHealthzAdaptor() if args.leader_elect else None
    if watchdog is not None:
        health.add(ENDPOINTS, watchdog.named_check())

    try:
        signing = _signing_files(args)
        sa_key = _service_account_key(args)
    except Fatal as err:
        return _fail(args, err)

    async def lead(cs: Clientset) -> None:
        """Upstream: StartControllers adds each started controller's check to /healthz."""
        options = ControllerManagerOptions(root_ca=kubeconfig_root_ca(args.kubeconfig), cluster_signing_cert=signing[0],
                                           max_endpoints_per_slice=args.max_endpoints_per_slice,
                                           cluster_signing_key=signing[1],
                                           cluster_signing_duration=args.cluster_signing_duration,
                                           service_account_key=sa_key,
                                           legacy_token_clean_up_period=args.legacy_service_account_token_clean_up_period,
                                           terminated_pod_gc_threshold=args.terminated_pod_gc_threshold,
                                           hpa_sync_period=args.horizontal_pod_autoscaler_sync_period,
                                           hpa_downscale_stabilization=args.horizontal_pod_autoscaler_downscale_stabilization,
                                           hpa_tolerance=args.horizontal_pod_autoscaler_tolerance,
                                           **concurrency_options(args))
        started = [n for n in CONTROLLERS if (options.root_ca or n != "root-ca-certificate-publisher-controller")
                   and (signing[0] or n != CSR_SIGNING) and (sa_key is not None or n != SA_TOKEN)]
        health.add(ENDPOINTS, *(NamedCheck(name, _ok) for name in started))
        if not args.use_service_account_credentials:
            await run_controllers(cs, options=options)
            return
        from .identities import ensure_controller_service_accounts
        from .sa_credentials import ServiceAccountClients
        await ensure_controller_service_accounts(cs)
        clients = ServiceAccountClients(args.kubeconfig, user_agent="kube-controller-manager")
        try:
            await run_controllers(cs, options=options, client_for=clients.client)
        finally:
            await clients.close()

    return run_component(args, user_agent="kube-controller-manager", lease="kube-controller-manager", run=lead,
                         health=health, watchdog=watchdog)


def _signing_files(args: argparse.Namespace) -> tuple[bytes, bytes]:
    """The CA the CSR signing controllers use; Fatal (one line) if its files cannot be used."""
    cert_file, key_file = args.cluster_signing_cert_file, args.cluster_signing_key_file
    if cert_file is None and key_file is None:
        pki = pathlib.Path(args.kubeconfig).parent / "pki"       # a kubeconfig `up` wrote: its CA
        cert_file, key_file = pki / "ca.crt", pki / "ca.key"
        if not (cert_file.is_file() and key_file.is_file()):
            return b"", b""
    if cert_file is None or key_file is None:
        raise Fatal("--cluster-signing-cert-file and --cluster-signing-key-file must be given together")
    try:
        cert, key = cert_file.read_bytes(), key_file.read_bytes()
        from ..controller.certificates.signer import load_ca
        load_ca(cert, key)
    except (OSError, ValueError, TypeError) as err:
        raise Fatal(f'failed to start certificate controller: error reading CA cert file "{cert_file}": {err}'
                    ) from None
    return cert, key


def _service_account_key(args: argparse.Namespace) -> Any:
    """--service-account-private-key-file's key (default pki/sa.key beside the kubeconfig, if
    there); None without one; Fatal if it cannot be used."""
    path = args.service_account_private_key_file
    if path is None:
        path = pathlib.Path(args.kubeconfig).parent / "pki" / "sa.key"
        if not path.is_file():
            return None
    from ..serviceaccount.jwt import load_private_key
    try:
        return load_private_key(path.read_bytes())
    except (OSError, ValueError, TypeError) as err:
        raise Fatal(f"error reading key for service account token controller: {err}") from None


def _fail(args: argparse.Namespace, err: Fatal) -> int:
    from .standalone import run_process

    async def main() -> None:
        raise err
    return run_process(args.log_level, main)


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


def _bootstrap_token_controllers(cs: Callable[[str], Clientset], factory: SharedInformerFactory,
                                 clock: Clock) -> list[Any]:
    """The token cleaner and the bootstrap signer, which kubeadm turns on
    (--controllers=*,bootstrapsigner,tokencleaner); upstream's default leaves them off."""
    from ..controller.bootstrap import Signer, TokenCleaner
    secrets = factory.core_v1().secrets()
    return [TokenCleaner(cs("token-cleaner"), secrets, clock=clock).run(),
            Signer(cs("bootstrap-signer"), secrets, factory.core_v1().configmaps(), clock=clock).run()]


def _cronjob_controllers(clientset: Clientset, factory: SharedInformerFactory, clock: Clock, broadcaster: Any,
                         options: ControllerManagerOptions) -> list[Any]:
    """The CronJob controller (cronjob-controller), --concurrent-cron-job-syncs workers, when
    batch/v1 jobs and cronjobs are served."""
    if not _serves("batch", "v1", "jobs", "cronjobs"):
        return []
    from ..controller.cronjob import CONTROLLER_NAME, ControllerV2
    cjc = ControllerV2(factory.batch_v1().jobs(), factory.batch_v1().cronjobs(), clientset, clock=clock,
                       recorder=broadcaster.new_recorder(CONTROLLER_NAME))
    return [cjc.run(options.cron_job_workers)]


def _statefulset_and_volume_controllers(cs: Callable[[str], Clientset], factory: SharedInformerFactory, clock: Clock,
                                        broadcaster: Any, options: ControllerManagerOptions) -> list[Any]:
    """The StatefulSet controller, the PersistentVolume binder, and the simulated local-path
    provisioner kind ships for its default StorageClass (upstream: a Deployment of its own;
    here it runs beside the binder as the persistent-volume-binder service account)."""
    runs: list[Any] = []
    core, apps = factory.core_v1(), factory.apps_v1()
    if _serves("apps", "v1", "statefulsets", "controllerrevisions"):
        from ..controller.statefulset import StatefulSetController
        runs.append(StatefulSetController(core.pods(), apps.statefulsets(), core.persistentvolumeclaims(),
                                          apps.controllerrevisions(), cs("statefulset-controller"), clock=clock,
                                          recorder=broadcaster.new_recorder("statefulset-controller")).run(
                                              options.statefulset_workers))
    if _serves("", "v1", "persistentvolumes", "persistentvolumeclaims") and \
            _serves("storage.k8s.io", "v1", "storageclasses"):
        from ..controller.volume.localpath import PROVISIONER_NAME, LocalPathProvisioner
        from ..controller.volume.localpath.provisioner import COMPONENT
        from ..controller.volume.persistentvolume import PersistentVolumeController, PersistentVolumeControllerOptions
        storage = factory.storage_v1()
        binder = cs("persistent-volume-binder")
        runs.append(PersistentVolumeController(
            core.persistentvolumes(), core.persistentvolumeclaims(), storage.storageclasses(), core.pods(), binder,
            clock=clock, recorder=broadcaster.new_recorder("persistentvolume-controller"),
            options=PersistentVolumeControllerOptions(external_provisioners=frozenset({PROVISIONER_NAME}))).run())
        runs.append(LocalPathProvisioner(core.persistentvolumeclaims(), core.persistentvolumes(),
                                         storage.storageclasses(), binder, clock=clock,
                                         recorder=broadcaster.new_recorder(COMPONENT)).run())
    return runs


def _endpoint_and_workload_controllers(cs: Callable[[str], Clientset], factory: SharedInformerFactory, clock: Clock,
                                       options: ControllerManagerOptions, broadcaster: Any) -> list[Any]:
    """The Endpoints, EndpointSlice and EndpointSlice mirroring controllers, and the
    ReplicationController and DaemonSet controllers (issue 14), each as its service account,
    when the API server serves their kinds. Upstream: newEndpointsControllerDescriptor,
    newEndpointSliceControllerDescriptor, ... (cmd/kube-controller-manager/app)."""
    runs: list[Any] = []
    core = factory.core_v1()
    if _serves("discovery.k8s.io", "v1", "endpointslices"):
        from ..controller.endpointslice import EndpointSliceController
        runs.append(EndpointSliceController(core.pods(), core.services(), core.nodes(),
                                            factory.discovery_v1().endpointslices(), cs("endpointslice-controller"),
                                            max_endpoints_per_slice=options.max_endpoints_per_slice, clock=clock,
                                            recorder=broadcaster.new_recorder("endpoint-slice-controller")).run(
                                                options.endpoint_slice_workers))
        from ..controller.endpointslicemirroring import EndpointSliceMirroringController
        runs.append(EndpointSliceMirroringController(
            core.endpoints(), factory.discovery_v1().endpointslices(), core.services(),
            cs("endpointslicemirroring-controller"), clock=clock,
            recorder=broadcaster.new_recorder("endpoint-slice-mirroring-controller")).run(options.mirroring_workers))
    from ..controller.endpoint import EndpointsController
    runs.append(EndpointsController(core.pods(), core.services(), core.endpoints(), cs("endpoint-controller"),
                                    clock=clock, recorder=broadcaster.new_recorder("endpoint-controller")).run(
                                        options.endpoint_workers))
    from ..controller.replication import ReplicationManager
    runs.append(ReplicationManager(core.pods(), core.replicationcontrollers(), cs("replication-controller"), clock=clock,
                                   recorder=broadcaster.new_recorder("replication-controller")).run(
                                       options.rc_workers))
    if _serves("apps", "v1", "daemonsets", "controllerrevisions"):
        from ..controller.daemon import DaemonSetsController
        apps = factory.apps_v1()
        runs.append(DaemonSetsController(apps.daemonsets(), apps.controllerrevisions(), core.pods(), core.nodes(),
                                         cs("daemon-set-controller"), clock=clock,
                                         recorder=broadcaster.new_recorder("daemonset-controller")).run(
                                             options.daemonset_workers))
    return runs


def _batch_and_pod_gc_controllers(cs: Callable[[str], Clientset], factory: SharedInformerFactory, clock: Clock,
                                  broadcaster: Any, options: ControllerManagerOptions) -> list[Any]:
    """The Job, TTL-after-finished and pod GC controllers, each as its own service account
    (job-controller, ttl-after-finished-controller, pod-garbage-collector)."""
    runs: list[Any] = []
    if _serves("batch", "v1", "jobs"):
        from ..controller.job import JobController
        job = JobController(factory.core_v1().pods(), factory.batch_v1().jobs(), cs("job-controller"), clock=clock,
                            recorder=broadcaster.new_recorder("job-controller"))
        runs.append(job.run(options.job_workers))
        from ..controller.ttlafterfinished import TTLAfterFinishedController
        ttl = TTLAfterFinishedController(factory.batch_v1().jobs(), cs("ttl-after-finished-controller"), clock=clock)
        runs.append(ttl.run(options.ttl_after_finished_workers))
    from ..controller.podgc import PodGCController, PodGCControllerOptions
    podgc = PodGCController(cs("pod-garbage-collector"), factory.core_v1().pods(), factory.core_v1().nodes(),
                            clock=clock,
                            options=PodGCControllerOptions(terminated_pod_threshold=options.terminated_pod_gc_threshold))
    runs.append(podgc.run())
    return runs


def _podautoscaler_controllers(clientset: Clientset, factory: SharedInformerFactory, clock: Clock,
                               broadcaster: Any, options: ControllerManagerOptions) -> list[Any]:
    """The HPA controller (upstream: startHPAController), its events from "horizontal-pod-autoscaler"."""
    if not _serves("autoscaling", "v2", "horizontalpodautoscalers"):
        return []
    from ..controller.podautoscaler.horizontal import HorizontalController, HorizontalControllerOptions
    hc = HorizontalController(factory.autoscaling_v2().horizontalpodautoscalers(), factory.core_v1().pods(),
                              clientset, clock=clock, recorder=broadcaster.new_recorder("horizontal-pod-autoscaler"),
                              options=HorizontalControllerOptions(
                                  sync_period=options.hpa_sync_period,
                                  downscale_stabilisation_window=options.hpa_downscale_stabilization,
                                  tolerance=options.hpa_tolerance))
    return [hc.run(options.hpa_workers)]


# --concurrent-*-syncs: (flag, ControllerManagerOptions field, upstream's default, help). The
# EndpointSlice controllers' two are validated as upstream's (1 to 50); the others take any int
# (fewer than 1: the controller runs no worker, as upstream's).
# Upstream: cmd/kube-controller-manager/app/options/*controller.go (AddFlags, Validate) and the
# controllers' config/v1alpha1 defaults.
CONCURRENCY_FLAGS: tuple[tuple[str, str, int, str], ...] = (
    ("concurrent-deployment-syncs", "deployment_workers", 5,
     "The number of deployment objects that are allowed to sync concurrently. Larger number = more responsive "
     "deployments, but more CPU (and network) load"),
    ("concurrent-replicaset-syncs", "replicaset_workers", 5,
     "The number of replica sets that are allowed to sync concurrently. Larger number = more responsive replica "
     "management, but more CPU (and network) load"),
    ("concurrent-rc-syncs", "rc_workers", 5,
     "The number of replication controllers that are allowed to sync concurrently. Larger number = more responsive "
     "replica management, but more CPU (and network) load"),
    ("concurrent-statefulset-syncs", "statefulset_workers", 5,
     "The number of statefulset objects that are allowed to sync concurrently. Larger number = more responsive "
     "statefulsets, but more CPU (and network) load"),
    ("concurrent-daemonset-syncs", "daemonset_workers", 2,
     "The number of daemonset objects that are allowed to sync concurrently. Larger number = more responsive "
     "daemonsets, but more CPU (and network) load"),
    ("concurrent-job-syncs", "job_workers", 5,
     "The number of job objects that are allowed to sync concurrently. Larger number = more responsive jobs, but "
     "more CPU (and network) load"),
    ("concurrent-cron-job-syncs", "cron_job_workers", 5,
     "The number of cron job objects that are allowed to sync concurrently. Larger number = more responsive jobs, "
     "but more CPU (and network) load"),
    ("concurrent-endpoint-syncs", "endpoint_workers", 5,
     "The number of endpoint syncing operations that will be done concurrently. Larger number = faster endpoint "
     "updating, but more CPU (and network) load"),
    ("concurrent-service-endpoint-syncs", "endpoint_slice_workers", 5,
     "The number of service endpoint syncing operations that will be done concurrently. Larger number = faster "
     "endpoint slice updating, but more CPU (and network) load. Defaults to 5."),
    ("mirroring-concurrent-service-endpoint-syncs", "mirroring_workers", 5,
     "The number of service endpoint syncing operations that will be done concurrently by the "
     "endpointslice-mirroring-controller. Larger number = faster endpoint slice updating, but more CPU (and "
     "network) load. Defaults to 5."),
    ("concurrent-gc-syncs", "gc_workers", 20,
     "The number of garbage collector workers that are allowed to sync concurrently."),
    ("concurrent-namespace-syncs", "namespace_workers", 10,
     "The number of namespace objects that are allowed to sync concurrently. Larger number = more responsive "
     "namespace termination, but more CPU (and network) load"),
    ("concurrent-resource-quota-syncs", "resource_quota_workers", 5,
     "The number of resource quotas that are allowed to sync concurrently. Larger number = more responsive quota "
     "management, but more CPU (and network) load"),
    ("concurrent-serviceaccount-token-syncs", "sa_token_workers", 5,
     "The number of service account token objects that are allowed to sync concurrently. Larger number = more "
     "responsive token generation, but more CPU (and network) load"),
    ("concurrent-ttl-after-finished-syncs", "ttl_after_finished_workers", 5,
     "The number of ttl-after-finished-controller workers that are allowed to sync concurrently."),
    ("concurrent-horizontal-pod-autoscaler-syncs", "hpa_workers", 5,
     "The number of horizontal pod autoscaler objects that are allowed to sync concurrently. Larger number = more "
     "responsive horizontal pod autoscaler objects processing, but more CPU (and network) load."),
    ("concurrent-validating-admission-policy-status-syncs", "vap_status_workers", 5,
     "The number of ValidatingAdmissionPolicyStatusController workers that are allowed to sync concurrently."),
)
_BOUNDED_1_TO_50 = ("concurrent-service-endpoint-syncs", "mirroring-concurrent-service-endpoint-syncs")


def _add_concurrency_flags(p: Any) -> None:
    for flag, field, default, text in CONCURRENCY_FLAGS:
        kind = _bounded_syncs(flag) if flag in _BOUNDED_1_TO_50 else int
        p.add_argument(f"--{flag}", type=kind, default=default, metavar="INT", dest=f"cm_{field}",
                       help=f"{text} (default {default})")


def _bounded_syncs(flag: str) -> Callable[[str], int]:
    """Upstream: EndpointSliceControllerOptions.Validate (and the mirroring one's): 1 to 50."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"{flag} must not be less than 1, but got {n}")
        if n > 50:
            raise argparse.ArgumentTypeError(f"{flag} must not be more than 50, but got {n}")
        return n
    return parse


def concurrency_options(args: argparse.Namespace) -> dict[str, int]:
    """The ControllerManagerOptions fields of the --concurrent-*-syncs flags given."""
    return {field: getattr(args, f"cm_{field}") for _, field, _, _ in CONCURRENCY_FLAGS}
