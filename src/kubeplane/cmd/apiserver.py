"""`kubeplane apiserver`: the API server alone, configured as kube-apiserver is.

    kubeplane certs --data-dir ha --control-plane-endpoint 127.0.0.1:6443 \\
        --apiserver-cert-extra-sans 127.0.0.2,127.0.0.3
    kubeplane apiserver --etcd-servers https://127.0.0.1:2379 --etcd-cafile ... \\
        --bind-address 127.0.0.2 --secure-port 6443 \\
        --tls-cert-file ha/pki/server.crt --tls-private-key-file ha/pki/server.key \\
        --client-ca-file ha/pki/ca.crt --token-auth-file ha/pki/tokens.csv \\
        --service-account-key-file ha/pki/sa.pub --service-account-signing-key-file ha/pki/sa.key \\
        --encryption-provider-config ha/encryption-config.yaml

No controllers, scheduler, kubelets or cluster DNS: those are `kubeplane controller-manager`,
`scheduler` and `kubelet`, each with a kubeconfig. Several API servers on one etcd (and one
--etcd-prefix) serve the same cluster when they are given the same files (`kubeplane certs`
makes them once): the cluster CA, the serving certificate, the service-account key, the
encryption key. Each keeps a lease in storage and the `default/kubernetes` endpoints list the
live ones (--endpoint-reconciler-type=lease, apiserver/controlplane/reconcilers.py); Service
ClusterIPs and NodePorts are allocated through storage, so none is handed out twice.

The flags are `up`'s API server flags (kube-apiserver's names) with kube-apiserver's serving
ones: --secure-port (default 6443), --bind-address (default 127.0.0.1, where upstream's is
0.0.0.0: kubeplane listens beyond loopback only when asked), --advertise-address (the address
the kubernetes Endpoints name; default --bind-address, or the first non-loopback address of the
host when that is 0.0.0.0 or ::, as upstream), --tls-cert-file and --tls-private-key-file
(required: there is no data dir to make them in). The storage is etcd (--etcd-servers is
required, as kube-apiserver requires it); --storage memory serves one process's memory, for
trying the flags out.

--service-account-key-file is accepted for kube-apiserver's command lines and checked to be a
PEM public key; tokens are verified with the signing key's public half (one key pair per
cluster, as `kubeplane certs` makes it): verifying with extra keys is not supported.

Upstream: cmd/kube-apiserver/app/options (ServerRunOptions, SecureServingOptions,
Etcd/Authentication options), pkg/controlplane/apiserver/options (--endpoint-reconciler-type).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import socket
from typing import Any

from . import flags
from .errors import Fatal, describe
from .standalone import add_log_level

ENDPOINT_RECONCILER_TYPES = ("lease", "none")    # upstream also has "master-count" (deprecated)
HELP = {
    "storage": "storage backend: etcd (--etcd-servers; the default) or memory (this process only)",
    "encryption_provider_config": "EncryptionConfiguration (apiserver.config.k8s.io/v1) for encryption at rest, the "
                                  "same file for every API server (`kubeplane certs` makes encryption-config.yaml; "
                                  "default: none, values stored as they are, as kube-apiserver)",
    "service_account_signing_key_file": "PEM RSA or ECDSA private key that signs service account tokens, the same for "
                                        "every API server (required; `kubeplane certs` makes pki/sa.key)",
    "client_ca_file": "CA bundle that client certificates are verified with; a verified certificate's CommonName is "
                      "the user, its Organizations the groups (required; `kubeplane certs` makes pki/ca.crt)",
    "token_auth_file": "static bearer tokens, CSV lines token,user,uid,\"group1,group2\" (default: none; "
                       "`kubeplane certs` makes pki/tokens.csv with the admin's)",
}


def add_parser(sub: Any) -> None:
    from . import up
    p: argparse.ArgumentParser = sub.add_parser("apiserver", help="run the API server alone (kube-apiserver's flags)")
    p.add_argument("--secure-port", type=flags.port, default=6443,
                   help="the port to serve HTTPS on (default 6443; 0 picks a free one, logged at start)")
    p.add_argument("--bind-address", default=flags.DEFAULT_BIND_ADDRESS,
                   help="the IP address to listen on (default 127.0.0.1; 0.0.0.0 listens on every interface)")
    p.add_argument("--advertise-address", default=None, metavar="IP",
                   help="the IP address the kubernetes Service's endpoints name for this server (default: "
                        "--bind-address, or the host's first non-loopback address when that is 0.0.0.0 or ::)")
    p.add_argument("--tls-cert-file", type=pathlib.Path, required=True, metavar="FILE",
                   help="the serving certificate (PEM; `kubeplane certs` makes pki/server.crt)")
    p.add_argument("--tls-private-key-file", type=pathlib.Path, required=True, metavar="FILE",
                   help="the serving certificate's key (PEM; pki/server.key)")
    p.add_argument("--service-account-key-file", type=pathlib.Path, action="append", default=[], metavar="FILE",
                   help="a PEM public key service account tokens are verified with (checked to be readable; "
                        "the signing key's own public half is what verifies)")
    p.add_argument("--endpoint-reconciler-type", choices=ENDPOINT_RECONCILER_TYPES, default="lease",
                   help="how the kubernetes Service's endpoints are kept: lease (every live API server, each "
                        "renewing its lease in storage) or none (default lease, as kube-apiserver)")
    up.add_api_server_flags(p)
    p.set_defaults(storage="etcd")
    for action in p._actions:          # `up`'s help names its data dir's files; there is none here
        if action.dest in HELP:
            action.help = HELP[action.dest]
    add_log_level(p)
    p.set_defaults(func=run)


def check(args: argparse.Namespace) -> None:
    """kube-apiserver's refusals of what it cannot start with, in its words."""
    if args.storage == "sqlite":
        raise Fatal("kubeplane apiserver stores in etcd (--storage etcd) or memory; "
                    "`kubeplane up` keeps a SQLite data dir")
    if args.storage == "etcd" and not args.etcd_servers:
        raise Fatal("--etcd-servers must be specified")
    if args.client_ca_file is None:
        raise Fatal("--client-ca-file must be specified (the CA client certificates and the kubeconfigs trust; "
                    "`kubeplane certs` makes pki/ca.crt)")
    if args.service_account_signing_key_file is None:
        raise Fatal("service-account-signing-key-file and service-account-issuer are required flags")
    for path in args.service_account_key_file:
        try:
            data = path.read_bytes()
        except OSError as err:
            raise Fatal(f"failed to parse service-account-key-file: {describe(err, 'open')}") from None
        if b"-----BEGIN" not in data:
            raise Fatal(f"failed to parse service-account-key-file: data does not contain any valid RSA or "
                        f"ECDSA public keys ({path})")
    for flag, path in (("tls-cert-file", args.tls_cert_file), ("tls-private-key-file", args.tls_private_key_file)):
        if not os.access(path, os.R_OK):
            raise Fatal(f"unable to load server certificate: --{flag} {path}: no such file or not readable")


def advertise_address(args: argparse.Namespace) -> str:
    """--advertise-address, else --bind-address unless it is unspecified, else the host's first
    non-loopback IPv4 address (upstream: ChooseHostInterface), else 127.0.0.1."""
    if args.advertise_address:
        return str(args.advertise_address)
    if args.bind_address not in ("0.0.0.0", "::"):
        return str(args.bind_address)
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            ip = str(info[4][0])
            if not ip.startswith("127."):
                return ip
    except OSError:
        pass
    return "127.0.0.1"


def run(args: argparse.Namespace) -> int:
    from . import up
    from .standalone import run_process
    os.umask(up.UMASK)
    # What `up`'s serving path reads and `kubeplane apiserver` does not take.
    args.data_dir = None
    args.controllers = False
    args.nodes = 0
    args.address, args.port = args.bind_address, args.secure_port
    args.advertise = advertise_address(args)

    async def main() -> None:
        check(args)
        up.configure_api_enablement(args)
        sock = up.listen(args.bind_address, args.secure_port)
        await up._serve(args, None, sock, sock.getsockname()[1])
    return run_process(args.log_level, main, use_uvloop=True, handle_signals=False)
