"""Logging for the kubeplane commands: klog-like lines on stderr, lifecycle lines at info.

    2026-11-27 10:00:00,123 INFO kubeplane.cmd.up: Serving securely on 127.0.0.1:6443
    2026-11-27 10:00:02,456 INFO kubeplane.client.tools.leaderelection.leaderelection: successfully acquired lease lease="kube-system/kube-scheduler"

Messages are constant and the details are structured fields (`extra=`), printed after the
message as key="value" pairs, as klog's InfoS does.

Levels: without --log-level the library stays at warning, so a busy cluster prints nothing
per object, while the lifecycle loggers (the commands themselves, leader election) print
info: what is served, leadership gained and lost, shutdown. upstream components print such
lines at klog's default verbosity. An explicit --log-level applies to everything.
"""
from __future__ import annotations

import logging
import sys

import orjson

# Loggers whose info lines say what the process is doing as a whole.
LIFECYCLE_LOGGERS = ("kubeplane.cmd", "kubeplane.client.tools.leaderelection")
LEVELS = ("debug", "info", "warning", "error", "critical")
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class KlogFormatter(logging.Formatter):
    """The message, then every `extra=` field as key="value" (strings JSON-quoted)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = [f"{k}={_value(v)}" for k, v in vars(record).items() if k not in _STANDARD_ATTRS]
        if not fields:
            return line
        head, sep, rest = line.partition("\n")      # a traceback stays below the fields
        return f"{head} {' '.join(fields)}{sep}{rest}"


def _value(v: object) -> str:
    if isinstance(v, str):
        return orjson.dumps(v).decode()
    return str(v)


def setup(level: str | None) -> None:
    """Configure the root logger once per process: stderr, klog-like lines, the levels above."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KlogFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel((level or "warning").upper())
    for name in LIFECYCLE_LOGGERS:
        logging.getLogger(name).setLevel((level or "info").upper())
