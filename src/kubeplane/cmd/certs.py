"""`kubeplane certs`: the PKI and kubeconfigs several API servers share, made once.

    kubeplane certs --data-dir ha --control-plane-endpoint 10.0.0.10:6443 \\
        --apiserver-cert-extra-sans 10.0.0.1,10.0.0.2,10.0.0.3,lb.example.com

writes what kubeadm's `init phase certs all` and `init phase kubeconfig all` write, in `up`'s
data-dir layout (so `kubeplane up --data-dir ha` could use it too):

    ha/pki/ca.crt, ca.key            the cluster CA: --client-ca-file, the kubeconfigs' CA,
                                     the controller-manager's --cluster-signing-cert/key-file
    ha/pki/server.crt, server.key    every API server's --tls-cert-file/--tls-private-key-file:
                                     localhost, 127.0.0.1, the kubernetes Service's names and
                                     ClusterIP, the endpoint's host and the extra SANs
    ha/pki/sa.key, sa.pub            --service-account-signing-key-file / --service-account-key-file
                                     (and the controller-manager's --service-account-private-key-file)
    ha/pki/front-proxy-*             the aggregation layer's CA and client certificate
    ha/pki/tokens.csv, admin.token   --token-auth-file: the admin's bearer token
    ha/encryption-config.yaml        --encryption-provider-config (a secretbox key)
    ha/admin.conf, controller-manager.conf, scheduler.conf
                                     kubeconfigs to https://<control-plane-endpoint>

Existing files are kept (as kubeadm keeps certificates it finds), so running it again only
adds what is missing; copy the directory to every control-plane machine.

Upstream: kubeadm init phase certs / kubeconfig (--cert-dir, --apiserver-cert-extra-sans,
--control-plane-endpoint, --service-cidr); our flags keep those names where they exist.
"""
from __future__ import annotations

import argparse
import pathlib
from typing import Any

from . import flags
from .errors import Fatal, describe
from .standalone import run_process


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "certs", help="make the shared PKI and kubeconfigs of several API servers (kubeadm init phase certs)")
    p.add_argument("--data-dir", type=pathlib.Path, default=pathlib.Path(".kubeplane"),
                   help="where pki/, encryption-config.yaml and the kubeconfigs are written (default ./.kubeplane)")
    p.add_argument("--control-plane-endpoint", default="127.0.0.1:6443", metavar="HOST:PORT",
                   help="the address clients reach the API servers at (a load balancer's), named by the "
                        "serving certificate and the kubeconfigs (default 127.0.0.1:6443)")
    p.add_argument("--apiserver-cert-extra-sans", type=flags.comma_list, default=[], metavar="NAMES",
                   help="more IPs and DNS names for the API servers' serving certificate (each API server's "
                        "--advertise-address), comma separated")
    p.add_argument("--service-cluster-ip-range", "--service-cidr", type=flags.service_cluster_ip_range,
                   default="10.96.0.0/12", metavar="CIDR",
                   help="the Service CIDR, whose first IP the serving certificate names (default 10.96.0.0/12)")
    p.add_argument("--log-level", default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def endpoint_host(endpoint: str) -> str:
    """The host of HOST:PORT (brackets of an IPv6 address dropped); Fatal without a port."""
    host, sep, port = endpoint.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise Fatal(f"--control-plane-endpoint {endpoint!r}: expected HOST:PORT")
    return host.strip("[]")


def make(data_dir: pathlib.Path, endpoint: str, extra_sans: list[str], service_cidr: str) -> None:
    """Load or make everything the module docstring lists."""
    from ..apiserver.aggregator.frontproxy import ensure_front_proxy_pki
    from ..serviceaccount.jwt import ensure_signing_key
    from ..storage.value.encryptionconfig import ensure_default_config
    from ..utils.files import make_private_dir
    from ..utils.pki import ensure_pki
    from .kubeconfig import write_component_kubeconfigs, write_kubeconfig
    from .up import kubernetes_service_ip
    host = endpoint_host(endpoint)
    make_private_dir(data_dir)
    pki = ensure_pki(data_dir, [host, *extra_sans, kubernetes_service_ip(service_cidr)])
    ensure_front_proxy_pki(data_dir / "pki")
    ensure_signing_key(data_dir / "pki")
    ensure_default_config(data_dir)
    server = f"https://{endpoint}"
    write_kubeconfig(data_dir / "admin.conf", server, pki.ca_cert, pki.token, pki.admin_cert, pki.admin_key)
    write_component_kubeconfigs(data_dir, server, pki.ca_cert)


def run(args: argparse.Namespace) -> int:
    async def main() -> None:
        try:
            make(args.data_dir.resolve(), args.control_plane_endpoint, args.apiserver_cert_extra_sans,
                 args.service_cluster_ip_range)
        except OSError as err:
            raise Fatal(f"data dir {args.data_dir} is not usable: {describe(err)}") from None
        print(f"certificates and kubeconfigs written to {args.data_dir.resolve()}", flush=True)
    return run_process(args.log_level, main, handle_signals=False)
