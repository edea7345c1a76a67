"""The --audit-* flags, their checks and what they build: the policy evaluator and the log backend.

    kubeplane up --audit-policy-file policy.yaml --audit-log-path audit.log

Auditing needs both a policy and a log path; with only one of them nothing is audited, as
upstream (which logs why). Upstream: AuditOptions, AuditLogOptions and AuditBatchOptions
(apiserver/pkg/server/options/audit.go), with kube-apiserver's defaults.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import log as auditlog
from . import policy as p

if TYPE_CHECKING:
    from ..server import APIServer
    from .filter import Auditor

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AuditOptions:
    policy_file: str = ""
    log_path: str = ""                  # "-": standard output
    log_maxage: int = 366               # days
    log_maxbackup: int = 100
    log_maxsize: int = 100              # megabytes; 0: no rotation
    log_format: str = auditlog.FORMAT_JSON
    log_mode: str = auditlog.DEFAULT_MODE
    log_batch_buffer_size: int = auditlog.DEFAULT_BUFFER_SIZE
    log_compress: bool = False

    def validate(self) -> list[str]:
        """Upstream: AuditLogOptions.Validate (only when the log backend is on) — its messages."""
        if not self.log_path:
            return []
        errs = []
        if self.log_mode not in auditlog.MODES:
            errs.append(f"invalid audit log mode {self.log_mode}, allowed modes are "
                        f"{_go_q(','.join(auditlog.MODES))}")
        elif self.log_mode == auditlog.MODE_BATCH and self.log_batch_buffer_size <= 0:
            errs.append(f"invalid audit batch log buffer size {self.log_batch_buffer_size}, must be a positive number")
        if self.log_format not in auditlog.FORMATS:
            errs.append(f"invalid audit log format {self.log_format}, allowed formats are "
                        f"{_go_q(','.join(auditlog.FORMATS))}")
        for flag, value in (("maxage", self.log_maxage), ("maxbackup", self.log_maxbackup),
                            ("maxsize", self.log_maxsize)):
            if value < 0:
                errs.append(f"--audit-log-{flag} {value} can't be a negative number")
        return errs

    def load_policy(self) -> p.Policy | None:
        """The policy, or None without --audit-policy-file; ValueError with upstream's message."""
        if not self.policy_file:
            return None
        try:
            return p.load_policy_file(self.policy_file)
        except p.PolicyError as err:
            raise ValueError(f"loading audit policy file: {err}") from None

    def writer(self) -> auditlog.Writer:
        """Upstream: AuditLogOptions.getWriter (ensureLogFile makes the file 0600, its directory 0700)."""
        if self.log_path == "-":
            return sys.stdout.buffer
        path = self.log_path
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_APPEND | os.O_RDWR, 0o600))
        if self.log_maxsize == 0:
            return open(path, "ab")           # closed by the backend's shutdown
        from .rotate import RotatingFile
        return RotatingFile(path, self.log_maxsize, self.log_maxage, self.log_maxbackup, self.log_compress)


def configure(api: APIServer, opts: AuditOptions) -> Auditor | None:
    """Check the flags, load the policy, open the log and set api.audit; ValueError (upstream's
    message) if any of it fails. Nothing is audited without both a policy and a log."""
    errs = opts.validate()
    if errs:
        raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    policy = opts.load_policy()
    if policy is None or not opts.log_path:
        if policy is not None:
            log.warning("No audit backend configured (--audit-log-path), no events will be recorded")
        elif opts.log_path:
            log.warning("No audit policy file provided, no events will be recorded for log backend")
        return None
    try:
        out = opts.writer()
    except OSError as err:
        raise ValueError(f"ensureLogFile: {err.strerror or err}: {opts.log_path}") from None
    from . import metrics
    from .filter import Auditor
    metrics.register()
    backend = auditlog.LogBackend(out, fmt=opts.log_format, mode=opts.log_mode,
                                  buffer_size=opts.log_batch_buffer_size, close=opts.log_path != "-")
    api.audit = Auditor(api, p.PolicyRuleEvaluator(policy), backend)
    return api.audit


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Upstream: AuditOptions.AddFlags (the log backend's flags; no webhook backend)."""
    from ...cmd import flags
    g = parser.add_argument_group("audit")
    g.add_argument("--audit-policy-file", default="", metavar="FILE",
                   help="path to the file that defines the audit policy configuration (audit.k8s.io/v1 Policy)")
    g.add_argument("--audit-log-path", default="", metavar="PATH",
                   help="if set, all requests coming to the apiserver will be logged to this file; '-' means "
                        "standard out")
    g.add_argument("--audit-log-maxage", type=_int, default=366, metavar="DAYS",
                   help="the maximum number of days to retain old audit log files based on the timestamp "
                        "encoded in their filename; 0: no limit (default 366)")
    g.add_argument("--audit-log-maxbackup", type=_int, default=100, metavar="N",
                   help="the maximum number of old audit log files to retain; 0: no limit (default 100)")
    g.add_argument("--audit-log-maxsize", type=_int, default=100, metavar="MB",
                   help="the maximum size in megabytes of the audit log file before it gets rotated; 0 "
                        "disables rotation (default 100)")
    g.add_argument("--audit-log-format", default=auditlog.FORMAT_JSON, metavar="FORMAT",
                   help='format of saved audits: "legacy" (1-line text) or "json" (default json)')
    g.add_argument("--audit-log-mode", default=auditlog.DEFAULT_MODE, metavar="MODE",
                   help="strategy for writing audit events: batch (buffered, written asynchronously by a "
                        "thread; dropped, with an error logged, when the buffer is full), blocking (a request "
                        "waits until its events are written), blocking-strict (and fails if they cannot be) "
                        "(default batch; kube-apiserver's is blocking, which costs each audited request a "
                        "hand-over to the writer thread and back, see BENCHMARKS.md)")
    g.add_argument("--audit-log-batch-buffer-size", type=_int, default=auditlog.DEFAULT_BUFFER_SIZE, metavar="N",
                   help="the size of the buffer to store events before writing; batch mode only (default 10000)")
    g.add_argument("--audit-log-compress", type=flags.go_bool, default=False, nargs="?", const=True, metavar="BOOL",
                   help="if set, the rotated log files will be compressed using gzip")


def from_args(args: argparse.Namespace) -> AuditOptions:
    return AuditOptions(policy_file=args.audit_policy_file, log_path=args.audit_log_path,
                        log_maxage=args.audit_log_maxage, log_maxbackup=args.audit_log_maxbackup,
                        log_maxsize=args.audit_log_maxsize, log_format=args.audit_log_format,
                        log_mode=args.audit_log_mode, log_batch_buffer_size=args.audit_log_batch_buffer_size,
                        log_compress=args.audit_log_compress)


def _int(text: str) -> int:
    """An integer (negative ones are refused by validate, with upstream's message)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


def _go_q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
