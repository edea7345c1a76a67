"""The `kubeplane` command: one entry point, a subcommand per component."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kubeplane", description="A Kubernetes control plane in Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    from . import controller_manager, kubelet, scheduler, up
    up.add_parser(sub)
    controller_manager.add_parser(sub)
    scheduler.add_parser(sub)
    kubelet.add_parser(sub)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
