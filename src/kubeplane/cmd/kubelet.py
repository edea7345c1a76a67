"""`kubeplane kubelet`: nodes against any API server from a kubeconfig.

    kubeplane kubelet --kubeconfig .kubeplane/kubeconfig --nodes 100 --profile crash-loop
    kubeplane kubelet --kubeconfig .kubeplane/kubeconfig --runtime process   # real processes
    kubeplane kubelet --kubeconfig .kubeplane/kubeconfig --runtime process --port 0   # any free port

It serves HTTPS on --address:--port (default 127.0.0.1:10250) for `kubectl logs`: its nodes
report that address as InternalIP and the bound port as their kubelet endpoint, and the API
server proxies pods/log there, authenticating with the kubeconfig's bearer token.

`kubeplane up --nodes N` runs the same code in its own process over the in-process
transport (kubeplane.kubelet.run_kubelet). Upstream: cmd/kubelet.
"""
from __future__ import annotations

import argparse
import pathlib
from typing import Any

from .standalone import add_component_parser, run_component


def add_parser(sub: Any) -> None:
    p = add_component_parser(sub, "kubelet", "run simulated nodes against an API server", "", run)
    p.add_argument("--nodes", type=int, default=1, help="simulated nodes to run (default 1)")
    p.add_argument("--runtime", choices=("sim", "process"), default="sim",
                   help="container runtime: sim (simulated), or process (each container's command runs as a "
                        "local process; every pod's IP is 127.0.0.1) (default sim)")
    p.add_argument("--profile", default="default",
                   help="stage profile: default, readiness-delay, failing-readiness, crash-loop, "
                        "image-pull-failure, or a directory of Stage YAML files")
    p.add_argument("--node-prefix", default="kubeplane-node-", help="node names are <prefix><i>")
    p.add_argument("--root-dir", type=pathlib.Path, default=None,
                   help="process runtime: where pod working directories and logs live (default: a temp dir)")
    p.add_argument("--address", default="127.0.0.1",
                   help="the IP address the kubelet serves on (/containerLogs), reported as the nodes' InternalIP "
                        "(default 127.0.0.1; 0.0.0.0 serves on every interface and reports the host's address)")
    p.add_argument("--port", type=int, default=10250,
                   help="the port the kubelet serves on; 0 picks a free one (default 10250)")


def run(args: argparse.Namespace) -> int:
    from ..kubelet import run_kubelet
    from ..kubelet.server import KubeletServer, kubeconfig_token
    server = KubeletServer(None, token=kubeconfig_token(args.kubeconfig), address=args.address, port=args.port)
    return run_component(args, user_agent="kubelet", lease="", run=lambda cs: run_kubelet(
        cs, nodes=args.nodes, runtime=args.runtime, profile=args.profile, node_prefix=args.node_prefix,
        data_dir=args.root_dir, server=server))
