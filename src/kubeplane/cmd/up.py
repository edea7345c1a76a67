"""`kubeplane up`: run the control plane in the foreground until Ctrl-C / SIGTERM.

    kubeplane up                      # ./.kubeplane, https://127.0.0.1:6443, one node

In order: check the flags (an unknown --profile is refused here), lock the data dir (a second
`up` on it stops here, having changed nothing), listen (a port in use stops here), tighten the
data dir to 0700/0600, load or make the PKI, open storage, serve HTTPS, write DIR/kubeconfig,
start the supervised components and print the one ready line. Every failure before the ready
line is one line on stderr and exit status 1.

The process runs with umask 077, so whatever it or the code it runs creates (state.db and its
WAL, the kubelet's directories and container logs) is private to its user.
"""
from __future__ import annotations

import argparse
import asyncio
import ipaddress
import contextlib
import functools
import logging
import os
import pathlib
import signal
import socket
import sqlite3
import ssl
import sys
import threading
from collections.abc import Iterator
from typing import Any, Callable, cast

import uvicorn

from ..apiserver.app import ASGIApp
from ..apiserver.authentication.tokenfile import TokenFile, TokenFileError
from ..apiserver.audit import options as audit_options
from . import audit as audit_flags
from ..apiserver.controlplane.kubernetesservice import start_controllers as start_bootstrap_controllers
from ..apiserver.apiextensions.controller import start_controller as start_crd_controller
from ..apiserver.metrics import InstrumentedStorage
from ..apiserver import enablement, resourceconfig
from ..apiserver.options import ServerRunOptions
from ..apiserver.server import APIServer
from ..apiserver.serving import Server, ServingOptions
from ..client.informer_groups import InformerGroups
from ..client.informers import ResourceInformer
from ..client.tools.cache.shared_informer import SharedIndexInformer
from ..api.resources import RESOURCES
from ..storage import (
    DEFAULT_COMPACTION_INTERVAL, DEFAULT_HISTORY_BYTES, EtcdConfig, Storage, StorageError, Transformer, new_storage,
    run_compactor,
)
from ..storage.etcd import DEFAULT_ETCD_PREFIX
from ..storage.value import EncryptionConfigError, ensure_default_config, new_storage_transformer
from ..utils.pki import PKI, ensure_pki
from . import flags
from ..serviceaccount.jwt import PrivateKey, ensure_signing_key, load_private_key
from . import identities
from ..apiserver.authorization import modes
from ..apiserver.authorization.rbac.reconcile import ensure_objects, remove_cluster_role_binding
from .datadir import DataDirLock, tighten_data_dir
from .errors import Fatal, describe
from .kubeconfig import write_component_kubeconfigs, write_kubeconfig
from .standalone import add_log_level
from .supervisor import CrashLoop, Supervisor

log = logging.getLogger(__name__)

UMASK = 0o077
# --kubelet-processes' default: 0 runs the simulated nodes in `up`'s own process, N > 0 in N
# processes of their own (cmd/up_children.py).
DEFAULT_KUBELET_PROCESSES = 0
# --scheduler-process's, likewise. It stays off (BENCHMARKS.md, session 13, quiet machine): at
# 10,000 pods on 1,000 nodes it is faster to available (18.2 s against 21.4-23.2 s) but costs ~20 %
# more CPU per pod, peak RSS 1,168 MB (up 870 + the scheduler's process 302) against ~835 MB, and a
# startup p99 of 4.4 s against 0.94-0.96 s: creation outruns binding done over HTTPS.
DEFAULT_SCHEDULER_PROCESS = False


def in_process_clientset(api: APIServer, component: str, user: Any = None, *, qps: float = 0.0, burst: int = 0) -> Any:
    """A clientset that reaches api without sockets or TLS, identified as `user` (a UserInfo;
    default system:<component>) with User-Agent `component`; `qps` > 0 paces its requests as
    client-go's rate limiter does (burst 0: 1.5 x qps, kube-controller-manager's 30 for 20)."""
    from ..client.clientset import Clientset
    from ..apiserver.inprocess import InProcessTransport
    transport: Any = InProcessTransport(api, user=user or f"system:{component}", user_agent=component)
    if qps > 0:
        from ..client.transport import RateLimitedTransport
        transport = RateLimitedTransport(transport, qps, burst or max(1, int(qps * 1.5)))
    return Clientset(transport)


def node_clientsets(api: APIServer) -> Any:
    """node name -> a clientset reaching api as that node (system:node:<name> in system:nodes),
    made once per node: what each kubelet's client certificate says upstream."""
    made: dict[str, Any] = {}

    def for_node(name: str) -> Any:
        cs = made.get(name)
        if cs is None:
            cs = made[name] = in_process_clientset(api, "kubelet", f"system:node:{name}")
        return cs
    return for_node


def add_components(supervisor: Supervisor, api: APIServer, args: argparse.Namespace, factory: Any) -> None:
    """The controllers, the scheduler and the kubelet(s), in this process over the in-process
    transport (--no-controllers leaves only the API server and the kubelets), each supervised;
    with --kubelet-processes / --scheduler-process the kubelets / the scheduler run in processes
    of their own instead, supervised the same way (up_children.py).

    They share one informer factory (not upstream, where each is a process of its own): every
    watch event is decoded once and cached once for all of them, which works because, as
    upstream requires, no component modifies an object it got from an informer. Each start of
    a component sees the factory through a ScopedInformers, so a crashed run's event handlers
    are removed before the next run adds its own.

    A component's modules are imported when it starts, after the ready line: the API server
    does not wait for the kubelet's or the controllers' code to load.
    """
    def scoped(run: Any) -> Any:
        async def start() -> None:
            view = ScopedInformers(factory)
            try:
                await run(view)
            finally:
                view.remove_handlers()
        return start

    async def controller_manager(f: Any) -> None:
        from .controller_manager import ControllerManagerOptions, run_controllers
        pki = args.data_dir.resolve() / "pki"       # ensure_pki's
        ca, ca_key = pki / "ca.crt", pki / "ca.key"  # the root CA publisher's; the CSR signers' (kubeadm's)
        options = ControllerManagerOptions(node_monitor_grace_period=args.node_monitor_grace_period,
                                           terminated_pod_gc_threshold=args.terminated_pod_gc_threshold,
                                           root_ca=ca.read_bytes() if ca.exists() else b"",
                                           cluster_signing_cert=ca.read_bytes() if ca_key.exists() else b"",
                                           cluster_signing_key=ca_key.read_bytes() if ca_key.exists() else b"",
                                           service_account_key=api.service_account_tokens().generator.key)
        pace: dict[str, Any] = {"qps": getattr(args, "kube_api_qps", 0.0), "burst": getattr(args, "kube_api_burst", 0)}
        kcm = in_process_clientset(api, "kube-controller-manager", identities.KUBE_CONTROLLER_MANAGER, **pace)
        await identities.ensure_controller_service_accounts(kcm)
        await run_controllers(kcm, options=options, factory=f,
                              client_for=lambda name: in_process_clientset(api, "kube-controller-manager",
                                                                           identities.controller_user(name), **pace))

    async def scheduler(f: Any) -> None:
        from .scheduler import run_scheduler
        await run_scheduler(in_process_clientset(api, "kube-scheduler", identities.KUBE_SCHEDULER), factory=f)

    async def kubelet(f: Any) -> None:
        from ..kubelet import run_kubelet
        from ..kubelet.kubelet import KubeletOptions
        await run_kubelet(in_process_clientset(api, "kubelet", identities.KUBELET), nodes=args.nodes,
                          runtime=args.runtime,
                          profile=args.profile, options=KubeletOptions(heartbeat_period=args.node_heartbeat_period,
                                                                       **cluster_dns_kubelet_options(args),
                                                                       streaming_connection_idle_timeout=getattr(
                                                                           args, "streaming_connection_idle_timeout",
                                                                           4 * 3600.0)),
                          node_registry=api.nodes, data_dir=args.data_dir.resolve() / "kubelet", factory=f,
                          clientset_for=node_clientsets(api), pod_network=args.pod_network,
                          node_port_addresses=args.nodeport_addresses)

    async def cluster_dns() -> None:             # informers of its own, as the coredns service account
        from . import cluster_dns as addon
        await addon.run(api, args, lambda cs_user: in_process_clientset(api, "coredns", cs_user))

    if args.controllers:
        supervisor.add("controller-manager", scoped(controller_manager))
        if getattr(args, "scheduler_process", False):           # a process of its own (up_children.py)
            from .up_children import add_scheduler_process
            add_scheduler_process(supervisor, args)
        else:
            supervisor.add("scheduler", scoped(scheduler))
        supervisor.add("cluster-dns", cluster_dns)
    if args.nodes > 0 and getattr(args, "kubelet_processes", 0):    # processes of their own (up_children.py)
        from .up_children import add_kubelet_processes
        add_kubelet_processes(supervisor, args)
    elif args.nodes > 0:
        supervisor.add("kubelet", scoped(kubelet))


class ScopedInformers(InformerGroups):
    """One component's view of the shared informer factory: the same informers, but every
    event handler the component adds is remembered, so remove_handlers() can take them off
    when the component stops (a crashed controller must not keep receiving events)."""

    def __init__(self, factory: Any) -> None:
        self.factory = factory
        self.handlers: list[tuple[Any, Any]] = []      # (shared informer, handler)

    def informer_for(self, group: str, version: str, plural: str, lister_type: Any = None) -> Any:
        inf = self.factory.informer_for(group, version, plural)
        tracked = cast(SharedIndexInformer, _TrackedInformer(inf.shared, self.handlers))   # passes the rest through
        return ResourceInformer(inf.ri, tracked, lister_type)

    def start(self) -> None:
        self.factory.start()

    async def wait_for_cache_sync(self) -> bool:
        return bool(await self.factory.wait_for_cache_sync())

    def remove_handlers(self) -> None:
        for informer, handler in self.handlers:
            with contextlib.suppress(ValueError):
                informer.remove_event_handler(handler)
        self.handlers.clear()


class _TrackedInformer:
    """A shared informer whose add_event_handler() is recorded; everything else passes through."""

    def __init__(self, informer: Any, handlers: list[tuple[Any, Any]]) -> None:
        self._informer = informer
        self._handlers = handlers

    def add_event_handler(self, handler: Any) -> Any:
        self._handlers.append((self._informer, handler))
        return self._informer.add_event_handler(handler)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._informer, name)


async def _shut_down_on_cancel(factory: Any) -> None:
    """Hold the shared informers until `up` stops its components, then stop them."""
    try:
        await asyncio.Event().wait()
    finally:
        await factory.shutdown()


def cluster_dns_kubelet_options(args: argparse.Namespace) -> dict[str, Any]:
    """The in-process kubelet's --cluster-dns and --cluster-domain: the kube-dns Service."""
    from .cluster_dns import dns_ip
    return {"cluster_dns": (dns_ip(args.service_cluster_ip_range),), "cluster_domain": args.cluster_domain}


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("up", help="run the whole control plane in the foreground")
    p.add_argument("--data-dir", type=pathlib.Path, default=pathlib.Path(".kubeplane"),
                   help="where state, certificates and the kubeconfig live (default ./.kubeplane); "
                        "one `up` at a time")
    p.add_argument("--port", type=flags.port, default=6443, help="HTTPS port (default 6443; 0 picks a free one)")
    p.add_argument("--address", default="127.0.0.1", help="listen address (default loopback only)")
    p.add_argument("--nodes", type=flags.non_negative_int, default=1, help="simulated nodes to start (default 1)")
    p.add_argument("--runtime", choices=("sim", "process"), default="sim",
                   help="how nodes run pods: sim, or process (real local processes) (default sim)")
    p.add_argument("--kubelet-processes", type=flags.non_negative_int, default=DEFAULT_KUBELET_PROCESSES,
                   metavar="N", help="run the nodes' kubelets in N processes of their own, which reach the API "
                   "server over HTTPS as each node (0: in this process; default %(default)s); a process that "
                   "exits is started again, and stopped with `up`")
    p.add_argument("--scheduler-process", action=argparse.BooleanOptionalAction, default=DEFAULT_SCHEDULER_PROCESS,
                   help="run the scheduler in a process of its own (`kubeplane scheduler` over HTTPS as "
                   "system:kube-scheduler), started again if it exits and stopped with `up`")
    flags.add_pod_network_flags(p)
    p.add_argument("--profile", default="default",
                   help="sim runtime behaviour: a shipped profile (default, readiness-delay, failing-readiness, "
                        "crash-loop, image-pull-failure) or a directory of stage YAML files")
    flags.add_node_heartbeat_flag(p)
    p.add_argument("--streaming-connection-idle-timeout", type=flags.go_duration, default=4 * 3600.0,
                   metavar="DURATION", help="the kubelets close an exec, attach or port-forward connection idle "
                   "this long (default 4h0m0s, the kubelet's; 0 never)")
    p.add_argument("--kube-api-qps", type=float, default=0.0, metavar="QPS",
                   help="the controller-manager's requests per second, each controller's client on its own "
                        "(kube-controller-manager's --kube-api-qps; 0: no limit, the default here, upstream's 20)")
    p.add_argument("--kube-api-burst", type=flags.non_negative_int, default=0, metavar="N",
                   help="requests a controller may send at once before --kube-api-qps paces it "
                        "(kube-controller-manager's --kube-api-burst; default: 1.5 x --kube-api-qps, upstream's 30)")
    p.add_argument("--terminated-pod-gc-threshold", type=int, default=12500, metavar="N",
                   help="finished pods kept before the pod garbage collector deletes the oldest "
                        "(<= 0: never; default 12500)")
    p.add_argument("--node-monitor-grace-period", type=flags.seconds, default=40.0, metavar="SECONDS",
                   help="how long a node may be silent before the node lifecycle controller marks it Unknown "
                        "(default 40, as kube-controller-manager through 1.31); keep it well above --node-heartbeat-period")
    p.add_argument("--no-controllers", dest="controllers", action="store_false",
                   help="run no controllers and no scheduler (the API server and kubelets only)")
    p.add_argument("--cluster-domain", default="cluster.local",
                   help="the cluster DNS zone (default cluster.local; the kubelets' --cluster-domain)")
    p.add_argument("--cluster-dns-address", default="127.0.0.1", metavar="IP",
                   help="where the cluster DNS server listens, UDP and TCP (default 127.0.0.1)")
    p.add_argument("--cluster-dns-port", type=flags.port, default=0, metavar="PORT",
                   help="the cluster DNS server's port (default 0: a free one, logged at start)")
    p.add_argument("--cluster-dns-listen", type=flags.ip_port, action="append", default=[], metavar="IP:PORT",
                   help="another address for the cluster DNS server (repeatable), local already (with "
                        "--pod-network netns, or auto as root, it listens on the cluster DNS IP's port 53 "
                        "by itself)")
    add_api_server_flags(p)
    add_log_level(p)
    p.set_defaults(func=run)


def add_api_server_flags(p: argparse.ArgumentParser) -> None:
    """The API server's flags, kube-apiserver's names: `up` and `kubeplane apiserver` share them."""
    p.add_argument("--storage", choices=("sqlite", "memory", "etcd"), default="sqlite",
                   help="storage backend: sqlite (DIR/state.db), memory, or etcd (--etcd-servers)")
    p.add_argument("--etcd-servers", type=flags.comma_list, default=[], metavar="URLS",
                   help="the etcd members to use with --storage etcd (scheme://ip:port, comma separated)")
    p.add_argument("--etcd-prefix", default=DEFAULT_ETCD_PREFIX,
                   help="the prefix of every key in etcd (default /registry, as kube-apiserver)")
    p.add_argument("--etcd-cafile", default=None, metavar="FILE", help="SSL Certificate Authority file used to "
                                                                       "secure etcd communication")
    p.add_argument("--etcd-certfile", default=None, metavar="FILE", help="SSL certification file used to "
                                                                         "secure etcd communication")
    p.add_argument("--etcd-keyfile", default=None, metavar="FILE", help="SSL key file used to secure etcd "
                                                                        "communication")
    p.add_argument("--watch-history", type=flags.positive_int, default=50_000,
                   help="events kept for watches to resume from (older resourceVersions get 410 Gone)")
    p.add_argument("--watch-history-bytes", type=flags.non_negative_int, default=DEFAULT_HISTORY_BYTES,
                   metavar="BYTES", help="bytes of events kept for watches to resume from, at least (default "
                                         "8 MiB; the history may hold up to 8 x the live data if that is more)")
    p.add_argument("--etcd-compaction-interval", type=flags.go_duration, default=DEFAULT_COMPACTION_INTERVAL,
                   metavar="DURATION", help="the interval of compaction requests, e.g. 5m, 30s; 0 disables "
                                            "compaction (default 5m0s, as kube-apiserver)")
    p.add_argument("--encryption-provider-config", type=pathlib.Path, default=None, metavar="FILE",
                   help="EncryptionConfiguration (apiserver.config.k8s.io/v1) for encryption at rest (default: "
                        "DIR/encryption-config.yaml, made on first start: Secrets sealed with secretbox)")
    p.add_argument("--max-requests-inflight", type=flags.non_negative_int, default=400, metavar="N",
                   help="read-only requests over HTTPS served at once; more are answered 429 (default 400, "
                        "as kube-apiserver; 0 = no limit)")
    p.add_argument("--max-mutating-requests-inflight", type=flags.non_negative_int, default=200, metavar="N",
                   help="mutating requests over HTTPS served at once; more are answered 429 (default 200, "
                        "as kube-apiserver; 0 = no limit)")
    p.add_argument("--request-timeout", type=flags.go_duration, default=60.0, metavar="DURATION",
                   help="the longest a non-watch request may take before a 504, e.g. 30s, 2m "
                        "(default 1m0s, as kube-apiserver; a client's ?timeout= may only shorten it)")
    p.add_argument("--min-request-timeout", type=flags.non_negative_int, default=1800, metavar="SECONDS",
                   help="a watch without timeoutSeconds ends after a random time between this and twice "
                        "this (default 1800, as kube-apiserver; 0 = never)")
    p.add_argument("--service-cluster-ip-range", type=flags.service_cluster_ip_range, default="10.96.0.0/12",
                   metavar="CIDR", help="the CIDR Services' ClusterIPs come from (an IPv4 and an IPv6 CIDR, "
                                        "comma-separated, for dual-stack); its first IP is the kubernetes "
                                        "Service's (default 10.96.0.0/12, as kubeadm)")
    p.add_argument("--service-node-port-range", type=flags.port_range, default="30000-32767", metavar="RANGE",
                   help="the ports NodePort and LoadBalancer Services are given (default 30000-32767, "
                        "as kube-apiserver)")
    p.add_argument("--admission-control-config-file", default=None, metavar="FILE",
                   help="AdmissionConfiguration (apiserver.config.k8s.io/v1) configuring admission plugins, "
                        "e.g. PodSecurity's defaults and exemptions")
    p.add_argument("--disable-admission-plugins", type=flags.admission_plugins, default=frozenset(),
                   metavar="NAMES", help="admission plugins to turn off, comma-separated, e.g. ServiceAccount "
                                         "(default none: every plugin kubeplane ships runs, in upstream's order)")
    p.add_argument("--runtime-config", action="append", default=[], metavar="KEY=VALUE,...",
                   help="enable or disable built-in APIs, as kube-apiserver: v1=true|false for the core group, "
                        "<group>/<version>=true|false, <group>/<version>/<resource>=true|false, "
                        "api/all|api/ga|api/beta|api/alpha=true|false (default: upstream 1.37's defaults)")
    p.add_argument("--feature-gates", action="append", default=[], metavar="NAME=BOOL,...",
                   help="feature gates that install resources: " + ", ".join(
                       f"{n}=true|false ({g.pre_release} - default={str(g.default).lower()})"
                       for n, g in sorted(enablement.FEATURE_GATES.items())))
    p.add_argument("--service-account-issuer", default="https://kubernetes.default.svc.cluster.local",
                   metavar="URL", help="the iss of service account tokens (default "
                                       "https://kubernetes.default.svc.cluster.local, as kubeadm)")
    p.add_argument("--api-audiences", type=lambda s: tuple(a for a in s.split(",") if a), default=(),
                   metavar="AUDIENCES", help="the audiences of a TokenRequest that names none, comma-separated "
                                             "(default: the service account issuer)")
    p.add_argument("--service-account-signing-key-file", type=pathlib.Path, default=None, metavar="FILE",
                   help="PEM RSA or ECDSA private key that signs service account tokens (default: "
                        "DIR/pki/sa.key, an RSA 2048 key made on first start)")
    p.add_argument("--service-account-max-token-expiration", type=flags.go_duration, default=0.0,
                   metavar="DURATION", help="the longest a TokenRequest's token may be valid, e.g. 24h "
                                            "(default 0: as long as asked)")
    p.add_argument("--client-ca-file", type=pathlib.Path, default=None, metavar="FILE",
                   help="CA bundle that client certificates are verified with; a verified certificate's CommonName "
                        "is the user, its Organizations the groups (default: DIR/pki/ca.crt, the cluster CA)")
    p.add_argument("--token-auth-file", type=pathlib.Path, default=None, metavar="FILE",
                   help="static bearer tokens, CSV lines token,user,uid,\"group1,group2\" (default: DIR/pki/tokens.csv, "
                        "the admin token's)")
    p.add_argument("--anonymous-auth", type=flags.go_bool, default=True, nargs="?", const=True, metavar="BOOL",
                   help="requests without credentials are system:anonymous, in system:unauthenticated (default "
                        "true, as kube-apiserver); false answers them 401")
    p.add_argument("--enable-bootstrap-token-auth", type=flags.go_bool, default=True, nargs="?", const=True,
                   metavar="BOOL", help="bootstrap token Secrets (kube-system/bootstrap-token-<id>) authenticate as "
                                        "system:bootstrap:<id> (default true, as kubeadm)")
    p.add_argument("--service-account-extend-token-expiration", type=flags.go_bool, default=True, nargs="?",
                   const=True,
                   metavar="BOOL", help="pod-bound tokens of the ServiceAccount plugin's projected volume are "
                                        "valid for a year, warning after an hour (default true, as kube-apiserver)")
    audit_flags.add_flags(p)
    p.add_argument("--authorization-mode", type=authorization_modes, default=modes.KUBEADM_DEFAULT,
                   metavar="MODES", help="authorizers in order, comma-separated: AlwaysAllow, AlwaysDeny, Node, "
                                         "RBAC (default Node,RBAC, as kubeadm; system:masters may do anything)")


def authorization_modes_served(requested: tuple[str, ...]) -> tuple[str, ...]:
    """RBAC needs its API: with rbac.authorization.k8s.io/v1 off (--runtime-config) there is no
    policy to decide by, so `up` runs AlwaysAllow instead (and says so)."""
    if modes.RBAC in requested and not enablement.enabled("rbac.authorization.k8s.io", "v1", "clusterroles"):
        log.warning("authorization-mode RBAC needs rbac.authorization.k8s.io/v1, which --runtime-config turns off: "
                    "authorizing with AlwaysAllow")
        return modes.DEFAULT
    return requested


def authorization_modes(value: str) -> tuple[str, ...]:
    try:
        return modes.parse(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def configure_api_enablement(args: argparse.Namespace) -> None:
    """--runtime-config and --feature-gates -> the served resources; Fatal with upstream's message."""
    try:
        gates = enablement.parse_feature_gates(args.feature_gates)
        runtime_config = resourceconfig.parse_configuration_map(args.runtime_config)
        enablement.configure(enablement.served(runtime_config, gates))
    except (resourceconfig.RuntimeConfigError, enablement.FeatureGateError) as err:
        raise Fatal(str(err)) from None


def server_run_options(args: argparse.Namespace) -> ServerRunOptions:
    return ServerRunOptions(max_requests_inflight=args.max_requests_inflight,
                            max_mutating_requests_inflight=args.max_mutating_requests_inflight,
                            request_timeout=args.request_timeout, min_request_timeout=args.min_request_timeout,
                            service_cluster_ip_range=args.service_cluster_ip_range,
                            service_node_port_range=args.service_node_port_range,
                            admission_control_config_file=args.admission_control_config_file,
                            disable_admission_plugins=args.disable_admission_plugins,
                            service_account_issuer=args.service_account_issuer,
                            api_audiences=args.api_audiences,
                            service_account_max_token_expiration=int(args.service_account_max_token_expiration),
                            service_account_extend_token_expiration=args.service_account_extend_token_expiration,
                            anonymous_auth=args.anonymous_auth,
                            enable_bootstrap_token_auth=args.enable_bootstrap_token_auth,
                            authorization_modes=authorization_modes_served(args.authorization_mode))



def service_account_key(args: argparse.Namespace, data_dir: pathlib.Path) -> Callable[[], PrivateKey]:
    """The signing key's source: a given key file is read now (a bad one stops the start, as
    upstream); the data dir's pki/sa.key when the first token is minted (made then if new)."""
    if args.service_account_signing_key_file:
        key = load_private_key(args.service_account_signing_key_file.read_bytes())
        return lambda: key
    return functools.partial(ensure_signing_key, data_dir / "pki")


def run(args: argparse.Namespace) -> int:
    from .standalone import run_process
    os.umask(UMASK)
    return run_process(args.log_level, lambda: serve(args), use_uvloop=True, handle_signals=False)


def listen(address: str, port: int) -> socket.socket:
    """Bind and listen before anything is written, so a port in use costs nothing; Fatal with
    upstream's words if it fails."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, sockaddr = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as err:
        raise Fatal(f"failed to create listener: {flags.listen_error(address, port, err)}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)    # as asyncio's create_server
        sock.bind(sockaddr)
        sock.listen(2048)
    except OSError as err:
        sock.close()
        raise Fatal(f"failed to create listener: {flags.listen_error(address, port, err)}") from None
    sock.set_inheritable(False)
    return sock


def check_pod_network(args: argparse.Namespace) -> None:
    """--pod-network=netns where namespaces cannot be made is refused before anything starts
    (auto falls back to the host's network and logs why, once)."""
    if args.runtime == "process" and args.nodes and args.pod_network == "netns":
        from ..kubelet.network import unavailable_reason
        if reason := unavailable_reason():
            raise Fatal(f"--pod-network=netns: cannot create network namespaces: {reason}")


def check_kubelet_processes(args: argparse.Namespace) -> None:
    """--kubelet-processes above 1 only with the sim runtime: each process of the process
    runtime would run a kube-proxy of its own on the same NodePorts."""
    if getattr(args, "kubelet_processes", 0) > 1 and args.runtime == "process":
        raise Fatal("--kubelet-processes above 1 needs --runtime sim")


async def serve(args: argparse.Namespace, on_ready: Callable[[_Server], None] | None = None) -> None:
    """on_ready(server) is called once everything has started (kubeplane.testing's control plane
    learns the API server and how to stop it from it)."""
    data_dir: pathlib.Path = args.data_dir.resolve()
    flags.check_profile(args.runtime, args.profile, args.nodes)
    check_pod_network(args)
    check_kubelet_processes(args)
    configure_api_enablement(args)
    lock = DataDirLock.acquire(data_dir)
    try:
        sock = listen(args.address, args.port)
        port = sock.getsockname()[1]
        try:
            from .cluster_dns import check_listen
            check_listen(args)                 # a DNS port in use: one line now, not a crash loop later
        except Fatal:
            sock.close()
            raise
        lock.record(port=str(port))
        await _serve(args, data_dir, sock, port, on_ready)
    finally:
        lock.release()


def open_data_dir(args: argparse.Namespace, data_dir: pathlib.Path) -> tuple[PKI, Storage]:
    """Tighten the data dir, load or make the PKI and the encryption key, open storage; Fatal
    (one line) if any of it fails."""
    try:
        tighten_data_dir(data_dir)
        pki = ensure_pki(data_dir, [args.address, kubernetes_service_ip(args.service_cluster_ip_range)])
        transformer = encryption_at_rest(args, data_dir)
        return pki, new_storage(args.storage, data_dir, history=args.watch_history,
                                history_bytes=args.watch_history_bytes, transformer=transformer,
                                etcd=etcd_config(args))
    except OSError as err:
        raise Fatal(f"data dir {data_dir} is not usable: {describe(err)}") from None
    except EncryptionConfigError as err:
        raise Fatal(f"--encryption-provider-config: {err}") from None
    except (sqlite3.Error, StorageError) as err:
        hint = " (was it written with another --encryption-provider-config?)" if "cannot read" in str(err) else ""
        raise Fatal(f"data dir {data_dir} is not usable: {err}{hint}") from None


def open_flags(args: argparse.Namespace) -> tuple[PKI, Storage]:
    """`kubeplane apiserver`'s PKI and storage, from its flags alone (no data dir)."""
    pki = PKI(args.client_ca_file, args.tls_cert_file, args.tls_private_key_file, "")
    try:
        transformer = (new_storage_transformer(args.encryption_provider_config, RESOURCES)
                       if args.encryption_provider_config else None)
        return pki, new_storage(args.storage, None, history=args.watch_history, history_bytes=args.watch_history_bytes,
                                transformer=transformer, etcd=etcd_config(args))
    except OSError as err:
        raise Fatal(f"--encryption-provider-config: {describe(err, 'open')}") from None
    except EncryptionConfigError as err:
        raise Fatal(f"--encryption-provider-config: {err}") from None


def kubernetes_service_ip(service_cidr: str) -> str:
    """The kubernetes Service's ClusterIP: the first address of the (first) Service CIDR, which
    the API server's certificate names. Upstream: ServiceIPRange's first IP (kubeadm's certs)"""
    net = ipaddress.ip_network(service_cidr.split(",")[0].strip(), strict=False)
    return str(net.network_address + 1)


def etcd_config(args: argparse.Namespace) -> EtcdConfig | None:
    """--etcd-* for --storage etcd (Fatal without servers); None for the other backends."""
    if args.storage != "etcd":
        return None
    if not args.etcd_servers:
        raise Fatal("--storage etcd needs --etcd-servers")
    return EtcdConfig(args.etcd_servers, args.etcd_prefix, args.etcd_cafile, args.etcd_certfile, args.etcd_keyfile)


def encryption_at_rest(args: argparse.Namespace, data_dir: pathlib.Path) -> Transformer | None:
    """The transformer of --encryption-provider-config, or of the configuration generated into
    the data dir on first start (Secrets sealed with a fresh secretbox key); None for memory
    storage, which writes nothing to disk."""
    if args.storage == "memory" and args.encryption_provider_config is None:
        return None
    path = args.encryption_provider_config or ensure_default_config(data_dir)
    return new_storage_transformer(path, RESOURCES)


async def _serve(args: argparse.Namespace, data_dir: pathlib.Path | None, sock: socket.socket, port: int,
                 on_ready: Callable[[_Server], None] | None = None) -> None:
    """Serve on sock until stopped; data_dir None: `kubeplane apiserver`, everything from flags."""
    try:
        pki, storage = open_data_dir(args, data_dir) if data_dir is not None else open_flags(args)
    except Fatal:
        sock.close()
        raise
    try:
        await storage.start()            # etcd: connect, fill the watch cache
    except (OSError, StorageError) as err:
        sock.close()
        raise Fatal(f"storage: {err}") from None
    try:
        options = server_run_options(args)
    except ValueError as err:          # --service-account-max-token-expiration
        sock.close()
        raise Fatal(str(err)) from None
    try:
        token_path = args.token_auth_file or pki.token_file or (data_dir and data_dir / "pki" / "tokens.csv")
        token_file = TokenFile.load(token_path) if token_path else TokenFile.from_names({})
    except (OSError, TokenFileError) as err:
        sock.close()
        reason = describe(err, "open") if isinstance(err, OSError) else str(err)
        raise Fatal(f"invalid authentication config: {reason}") from None
    try:
        api = APIServer(InstrumentedStorage(storage), token_file=token_file, options=options)
    except ValueError as err:          # --admission-control-config-file
        sock.close()
        raise Fatal(f"failed to initialize admission: {err}") from None
    client_ca = args.client_ca_file or pki.ca_cert
    api.client_ca = True
    try:
        api.service_account_key = service_account_key(args, data_dir or pathlib.Path("."))
    except (OSError, ValueError, TypeError) as err:
        sock.close()
        raise Fatal(f"failed to parse service-account-signing-key-file: {err}") from None
    try:
        audit_options.configure(api, audit_flags.from_args(args))     # --audit-*
    except ValueError as err:
        sock.close()
        raise Fatal(str(err)) from None
    await bootstrap(api, options)
    serving_options = ServingOptions()
    config = uvicorn.Config(ASGIApp(api), loop="none",
                            http=serving_options.protocol(),  # type: ignore[arg-type]  # called like a class
                            ssl_certfile=str(pki.server_cert), ssl_keyfile=str(pki.server_key),
                            ssl_cert_reqs=ssl.CERT_OPTIONAL, ssl_ca_certs=str(client_ca),   # x509 client certs
                            lifespan="off", log_level="warning", access_log=False,
                            ws="none",     # upgrades reach the app, which tunnels them (apiserver/aggregator/upgrade.py)
                            timeout_keep_alive=int(serving_options.idle_timeout), proxy_headers=False,
                            timeout_graceful_shutdown=5)
    supervisor = Supervisor()
    tasks: list[asyncio.Future[None]] = []

    async def stop_components() -> None:
        """Stop the components, then end open watches: uvicorn drains requests, and a watch
        never finishes by itself."""
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        storage.stop_watches()

    compactor = asyncio.ensure_future(run_compactor(storage, args.etcd_compaction_interval))
    server = _Server(config, api, serving=serving_options, before_shutdown=stop_components)
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        listening = asyncio.ensure_future(server.listening.wait())
        await asyncio.wait({serving, listening}, return_when=asyncio.FIRST_COMPLETED)
        if serving.done():            # uvicorn could not start (it has logged why)
            listening.cancel()
            serving.result()
            raise Fatal("the HTTPS server did not start")
        host = "127.0.0.1" if args.address in ("0.0.0.0", "::") else args.address
        api.server_address = flags.host_port(getattr(args, "advertise", None) or host, port)
        if data_dir is not None:
            kubeconfig = data_dir / "kubeconfig"
            write_kubeconfig(kubeconfig, f"https://{api.server_address}", pki.ca_cert, pki.token,
                             pki.admin_cert, pki.admin_key)
            write_component_kubeconfigs(data_dir, f"https://{api.server_address}", pki.ca_cert)
        log.info("Serving securely on %s", flags.host_port(args.address, port))
        tasks.extend(await start_bootstrap_controllers(        # the kubernetes Service, repair loops
            api, reconciler=getattr(args, "endpoint_reconciler_type", "lease")))
        tasks.extend(await start_crd_controller(api))            # CRDs: names, establishing, serving, cleanup
        tasks.extend(await start_aggregator(api, pki, client_ca))  # APIServices with spec.service: proxy, availability
        tasks.append(asyncio.ensure_future(identities.ensure_cluster_info(        # kubeadm's, after the ready line
            api, f"https://{api.server_address}", pki.ca_cert.read_bytes())))
        if args.controllers:                                   # kubeadm's CoreDNS addon objects, likewise
            from .cluster_dns import ensure_addon
            tasks.append(asyncio.ensure_future(ensure_addon(api, args)))
        tasks.extend(start_components(supervisor, api, args, server))
        if data_dir is not None:
            _log_serving(args, data_dir, supervisor)
            print(f"kubeplane is ready: export KUBECONFIG={kubeconfig}", flush=True)
        if on_ready is not None:
            on_ready(server)
        await serving
    finally:
        await stop_components()
        if not serving.done():
            server.should_exit = True
            await serving
        compactor.cancel()
        await api.admission.close()
        if api.audit is not None:          # what is queued is written
            await asyncio.to_thread(api.audit.shutdown)
        await storage.close()
        sys.stdout.flush()
    log.info("Stopped")
    if server.crash_loop is not None:
        raise Fatal(str(server.crash_loop))


async def bootstrap(api: APIServer, options: ServerRunOptions, attempts: int = 5) -> None:
    """The system objects every start ensures (namespaces, RBAC policy, APIServices, the
    default StorageClass). Several API servers starting at once on one etcd race to write
    them: a conflict or an object created meanwhile means another did it, so the whole
    (idempotent) pass runs again, as upstream's post-start hooks retry."""
    from ..api import errors
    for attempt in range(1, attempts + 1):
        try:
            await api.bootstrap()
            if modes.RBAC in options.authorization_modes:
                node_authorizer = modes.has_node_authorizer(options.authorization_modes)
                await ensure_objects(api, identities.kubeadm_policy(node_authorizer))
                if node_authorizer:          # the stand-in binding of a start without the Node authorizer
                    await remove_cluster_role_binding(api, identities.NODES_BINDING)
            from .storage_bootstrap import ensure_default_storage_class     # kind's `standard` (issue 14, helper sts)
            await ensure_default_storage_class(api)
            await modes.synced(api)          # the policy written above decides the first request
            return
        except (errors.Conflict, errors.AlreadyExists) as err:
            if attempt == attempts:
                raise
            log.info("bootstrap raced another API server (%s): again", err.message)


async def start_aggregator(api: APIServer, pki: PKI, client_ca: pathlib.Path) -> list[asyncio.Future[None]]:
    """The front proxy's certificates and trust ConfigMap, then the aggregator (apiserver/aggregator/)."""
    from ..apiserver.aggregator import controller as aggregator, frontproxy
    front = frontproxy.ensure_front_proxy_pki(pki.ca_cert.parent)
    await frontproxy.publish_authentication_config(api, client_ca.read_bytes(), front.ca_cert.read_bytes())
    return await aggregator.start(api, proxy_client_cert=str(front.client_cert), proxy_client_key=str(front.client_key))


def start_components(supervisor: Supervisor, api: APIServer, args: argparse.Namespace,
                     server: _Server) -> list[asyncio.Future[None]]:
    """Start the shared informers and the supervised components; a crash loop stops `up`."""
    from ..client.informers import SharedInformerFactory
    factory = SharedInformerFactory(in_process_clientset(api, "kubeplane-informers", identities.KUBE_CONTROLLER_MANAGER))
    add_components(supervisor, api, args, factory)
    api.health.add_health_checks(*(c.health_check() for c in supervisor.components))
    supervising = asyncio.ensure_future(supervisor.run())

    def on_done(task: asyncio.Future[None]) -> None:
        if not task.cancelled() and isinstance(task.exception(), CrashLoop):
            server.crash_loop = task.exception()       # exit non-zero once stopped
            server.handle_exit(signal.SIGTERM, None)
    supervising.add_done_callback(on_done)
    return [asyncio.ensure_future(_shut_down_on_cancel(factory)), supervising]


def _log_serving(args: argparse.Namespace, data_dir: pathlib.Path, supervisor: Supervisor) -> None:
    log.info("Starting control plane", extra={
        "dataDir": str(data_dir), "storage": args.storage, "nodes": args.nodes, "runtime": args.runtime,
        **({"profile": args.profile} if args.runtime == "sim" and args.nodes else {}),
        **({"kubeletProcesses": args.kubelet_processes} if getattr(args, "kubelet_processes", 0) and args.nodes
           else {}),
        "components": ",".join(c.name for c in supervisor.components) or "none"})


class _Server(Server):
    """uvicorn's server (with upstream's connection limits, see apiserver/serving.py), stopping
    our components before it drains, logging the shutdown, and failing /readyz from the moment
    it starts."""

    def __init__(self, config: uvicorn.Config, api: APIServer, *, serving: ServingOptions,
                 before_shutdown: Any) -> None:
        super().__init__(config, serving=serving)
        self.api = api
        self.before_shutdown = before_shutdown
        self.crash_loop: BaseException | None = None
        self.listening = asyncio.Event()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            self.listening.set()

    async def shutdown(self, sockets: Any = None) -> None:
        await self.before_shutdown()
        await super().shutdown(sockets)

    def handle_exit(self, sig: int, frame: Any) -> None:
        if not self.should_exit:
            reason = "crash loop" if self.crash_loop else signal.Signals(sig).name
            log.info("Shutting down", extra={"reason": reason})
            self.api.health.shutting_down = True
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Ctrl-C / SIGTERM start a graceful shutdown; unlike uvicorn's own handling, the signal
        is not re-raised afterwards, so storage is closed and the exit status is 0. Run in another
        thread than the main one (kubeplane.testing), it leaves signals alone, as uvicorn does."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()
        signals = (signal.SIGINT, signal.SIGTERM)
        for sig in signals:
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
