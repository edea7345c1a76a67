"""`kubeplane kubelet`: nodes against any API server from a kubeconfig.

    kubeplane kubelet --kubeconfig .kubeplane/kubeconfig --nodes 100 --profile crash-loop
    kubeplane kubelet --kubeconfig .kubeplane/kubeconfig --runtime process   # real processes
    kubeplane kubelet --kubeconfig .kubeplane/kubeconfig --runtime process --port 0   # any free port
    kubeplane kubelet --kubeconfig .kubeplane/kubeconfig --runtime process --pod-network netns

It serves HTTPS on --address:--port (default 127.0.0.1:10250), logged at start ("Starting to
listen"): /containerLogs for `kubectl logs` (its nodes report that address as InternalIP and
the bound port as their kubelet endpoint, and the API server proxies pods/log there), /metrics,
/metrics/probes and /healthz, each authenticated with the kubeconfig's bearer token.

Each node acts as system:node:<name> (group system:nodes), decided by the Node authorizer and
NodeRestriction as a real kubelet: it gets its own client certificate by TLS bootstrapping
(kubelet/certificate/bootstrap.py), a CertificateSigningRequest made with the kubeconfig's
credential that the controller-manager approves and signs (`kubectl get csr` lists them). The
pair is kept in --cert-dir/<node>/kubelet-client-current.pem (default ROOT_DIR/pki with a
--root-dir, else memory only) and reused while valid; with --rotate-certificates (default) each
node renews it at 70-90 % of its life with a CSR made with its current one
(kubelet/certificate/manager.py). The one pod informer serving every node of
the process stays on the kubeconfig's credential (a node may only list its own pods), so that
user must be able to list and watch pods, as the admin's can.

--pod-network (process runtime) means what it means for `up`: as root (auto) or with netns,
each pod gets a network namespace and an address from its node's podCIDR, read from the Node
object (a new Node gets the next /24 no other Node has, so the kubelet's nodes never take the
podCIDRs of `up`'s), and the kubelet runs a kube-proxy for Services (kubelet/network/proxy.py;
--nodeport-addresses as kube-proxy's). Its Services and EndpointSlices are listed and watched
with the kubeconfig's credential, as the pods are.

A --root-dir is locked (ROOT_DIR/kubelet.lock) while the kubelet runs, as `up` locks its
data dir: two kubelets in one root dir would take each other's pod directories.

`kubeplane up --nodes N` runs the same code in its own process over the in-process
transport (kubeplane.kubelet.run_kubelet); `up --kubelet-processes N` runs this command instead,
in N processes, each with a share of the nodes (--first-node). Upstream: cmd/kubelet.
"""
from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import pathlib
from typing import Any

from . import flags
from .errors import Fatal
from .standalone import add_component_parser, check_kubeconfig, run_component

LOCK_FILE = "kubelet.lock"
log = logging.getLogger(__name__)


def add_parser(sub: Any) -> None:
    p = add_component_parser(sub, "kubelet", "run simulated nodes against an API server", "", run)
    p.add_argument("--nodes", type=flags.non_negative_int, default=1, help="simulated nodes to run (default 1)")
    p.add_argument("--runtime", choices=("sim", "process"), default="sim",
                   help="container runtime: sim (simulated), or process (each container's command runs as a "
                        "local process) (default sim)")
    flags.add_pod_network_flags(p)
    p.add_argument("--profile", default="default",
                   help="stage profile: default, readiness-delay, failing-readiness, crash-loop, "
                        "image-pull-failure, or a directory of Stage YAML files")
    p.add_argument("--node-prefix", default="kubeplane-node-", help="node names are <prefix><i>")
    p.add_argument("--first-node", type=flags.non_negative_int, default=0, metavar="I",
                   help="the first node's index i (default 0): several kubelet processes share out one range "
                        "of names (`up --kubelet-processes`)")
    flags.add_node_heartbeat_flag(p)
    p.add_argument("--root-dir", type=pathlib.Path, default=None,
                   help="process runtime: where pod working directories and logs live (default: a temp dir)")
    p.add_argument("--address", default="127.0.0.1",
                   help="the IP address the kubelet serves on (/containerLogs, /metrics, /healthz), reported as the "
                        "nodes' InternalIP "
                        "(default 127.0.0.1; 0.0.0.0 serves on every interface and reports the host's address)")
    p.add_argument("--cert-dir", type=pathlib.Path, default=None,
                   help="where each node's client certificate is kept, in <cert-dir>/<node>/ (default ROOT_DIR/pki "
                        "with --root-dir, else not kept)")
    p.add_argument("--rotate-certificates", type=flags.go_bool, default=True, nargs="?", const=True, metavar="BOOL",
                   help="renew each node's client certificate at 70-90 %% of its life with a CSR made with the current "
                        "one (default true, as kubeadm's kubelet configuration)")
    p.add_argument("--cluster-dns", type=flags.ip_list, default=("10.96.0.10",), metavar="IP,...",
                   help="the pods' DNS servers (default 10.96.0.10, `kubeplane up`'s kube-dns Service; "
                        "upstream's default is none)")
    p.add_argument("--cluster-domain", default="cluster.local",
                   help="the cluster's DNS domain, searched by the pods (default cluster.local, as kubeadm)")
    p.add_argument("--resolv-conf", default="/etc/resolv.conf",
                   help="the resolver file the pods' DNS starts from (\"\": none; default /etc/resolv.conf)")
    p.add_argument("--streaming-connection-idle-timeout", type=flags.go_duration, default=4 * 3600.0,
                   metavar="DURATION", help="close an exec, attach or port-forward connection idle this long "
                   "(default 4h0m0s; 0 never)")
    p.add_argument("--port", type=flags.port, default=10250,
                   help="the port the kubelet serves on; 0 picks a free one (default 10250)")


def run(args: argparse.Namespace) -> int:
    from ..kubelet import node_names, run_kubelet
    from ..kubelet.kubelet import KubeletOptions
    from ..kubelet.server import KubeletServer
    from .datadir import DataDirLock
    from .standalone import run_process
    from .up import check_pod_network

    try:
        flags.check_profile(args.runtime, args.profile)
        check_pod_network(args)
        token = str(check_kubeconfig(args.kubeconfig).get("token", ""))
        lock = DataDirLock.acquire(args.root_dir, LOCK_FILE, "kubeplane kubelet") if args.root_dir else None
    except Fatal as err:
        return run_process(args.log_level, _fail(err))
    server = KubeletServer(None, token=token, address=args.address, port=args.port, logger=log)

    cert_dir = args.cert_dir or (args.root_dir / "pki" if args.root_dir else None)

    async def run_nodes(cs: Any) -> None:
        pairs: dict[str, tuple[bytes, bytes]] = {}
        names = node_names(args.nodes, args.node_prefix, args.first_node)
        clientsets = await node_clientsets(cs, args.kubeconfig, names, cert_dir, pairs)
        rotations = [asyncio.ensure_future(rotate(node, node_cs, pairs[node], cert_dir))
                     for node, node_cs in clientsets.items()] if args.rotate_certificates else []
        try:
            await run_kubelet(cs, nodes=args.nodes, runtime=args.runtime, profile=args.profile,
                              node_prefix=args.node_prefix, first_node=args.first_node, data_dir=args.root_dir,
                              server=server,
                              options=KubeletOptions(heartbeat_period=args.node_heartbeat_period,
                                                     cluster_dns=args.cluster_dns, cluster_domain=args.cluster_domain,
                                                     resolv_conf=args.resolv_conf,
                                                     streaming_connection_idle_timeout=args.streaming_connection_idle_timeout),
                              pod_network=args.pod_network, node_port_addresses=args.nodeport_addresses,
                              clientset_for=lambda node: clientsets.get(node, cs))
        except OSError as err:
            if getattr(server, "_runner", None) is None and err.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL,
                                                                         errno.EACCES):
                raise Fatal(flags.listen_error(args.address, args.port, err)) from None   # the server never started
            raise
        finally:
            for task in rotations:
                task.cancel()
            await asyncio.gather(*rotations, return_exceptions=True)
            for node_cs in clientsets.values():
                await node_cs.close()

    try:
        return run_component(args, user_agent="kubelet", lease="", run=run_nodes)
    finally:
        if lock:
            lock.release()


async def node_clientsets(bootstrap: Any, kubeconfig: pathlib.Path, nodes: list[str],
                          cert_dir: pathlib.Path | None, pairs: dict[str, tuple[bytes, bytes]]) -> dict[str, Any]:
    """node name -> a clientset over HTTPS with that node's client certificate, each requested
    with the kubeconfig's credential (all at once) or taken from cert_dir (and put in `pairs`).
    Fatal if the API server refuses a request: upstream's kubelet would retry for an hour."""
    import base64

    from ..api import errors
    from ..client.clientset import Clientset
    from ..client.transport import HTTPTransport, load_kubeconfig
    from ..kubelet.certificate.bootstrap import BootstrapError, load_or_request_client_cert

    cluster, _ = load_kubeconfig(kubeconfig)
    ca = base64.b64decode(cluster["certificate-authority-data"]) if cluster.get("certificate-authority-data") else (
        (kubeconfig.parent / cluster["certificate-authority"]).read_bytes() if cluster.get("certificate-authority")
        else None)

    async def one(node: str) -> tuple[str, Any]:
        pair = pairs[node] = await load_or_request_client_cert(bootstrap, node, cert_dir / node if cert_dir else None,
                                                                ca)
        return node, Clientset(HTTPTransport(cluster["server"], ca_data=ca, user_agent="kubelet", client_cert=pair))
    try:
        return dict(await asyncio.gather(*(one(n) for n in nodes)))
    except errors.StatusError as err:
        raise Fatal(f"failed to run Kubelet: unable to create certificate signing request: {err}") from None
    except BootstrapError as err:
        raise Fatal(f"failed to run Kubelet: {err}") from None


async def rotate(node: str, clientset: Any, pair: tuple[bytes, bytes], cert_dir: pathlib.Path | None) -> None:
    """--rotate-certificates: renew the node's client certificate with its own (a CSR the
    approver grants as selfnodeclient), keep it, and present it from then on."""
    from ..kubelet.certificate.bootstrap import keep, request_node_certificate
    from ..kubelet.certificate.manager import rotate_forever

    async def renew() -> tuple[bytes, bytes]:
        cert, key = await request_node_certificate(clientset, node)
        keep(cert_dir / node if cert_dir else None, cert, key)
        return cert, key
    await rotate_forever(node, pair, renew, clientset.transport.set_client_cert)


def _fail(err: Fatal) -> Any:
    async def main() -> None:
        raise err
    return main
