"""The `kubeplane` command: one entry point, a subcommand per component.

    kubeplane --version          Kubernetes v1.37.0-kubeplane
    kubeplane --version=raw      version.Info{Major:"1", Minor:"37", GitVersion:...}

Upstream: component-base/version/verflag (every Kubernetes binary's --version).
"""
from __future__ import annotations

import sys

from .flags import ArgumentParser


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="kubeplane", description="A Kubernetes control plane in Python.")
    parser.add_argument("--version", nargs="?", const="true", choices=("true", "raw"), metavar="raw",
                        help="print version information and quit; --version=raw prints more")
    sub = parser.add_subparsers(dest="command")
    from . import apiserver, certs, controller_manager, etcd, kubelet, reset, scheduler, snapshot, up
    up.add_parser(sub)
    apiserver.add_parser(sub)
    certs.add_parser(sub)
    reset.add_parser(sub)
    snapshot.add_parser(sub)
    etcd.add_parser(sub)
    controller_manager.add_parser(sub)
    scheduler.add_parser(sub)
    kubelet.add_parser(sub)
    args = parser.parse_args(argv)
    if args.version:
        print(version_text(raw=args.version == "raw"))
        return 0
    if args.command is None:
        parser.error(f"a command is required: {', '.join(sub.choices)}")
    return int(args.func(args) or 0)


def version_text(raw: bool = False) -> str:
    """Upstream: verflag.PrintAndExitIfRequested ("Kubernetes " + gitVersion, or Go's %#v of
    version.Info for raw)."""
    from ..apiserver.server import KUBERNETES_VERSION as v
    if not raw:
        return f"Kubernetes {v['gitVersion']}"
    fields = ", ".join(f'{k[0].upper()}{k[1:]}:"{val}"' for k, val in v.items())
    return "version.Info{" + fields + "}"


if __name__ == "__main__":
    sys.exit(main())
