"""`up`'s --audit-* flags (apiserver/audit/options.py checks them and builds the auditor).

Upstream: AuditOptions.AddFlags (apiserver/pkg/server/options/audit.go): the log backend's
flags; no webhook backend.
"""
from __future__ import annotations

import argparse

from ..apiserver.audit import log as auditlog
from ..apiserver.audit.options import AuditOptions
from . import flags


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add the --audit-* flags to parser (their own group in --help)."""
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
    g.add_argument("--audit-log-version", default="audit.k8s.io/v1", metavar="GROUP/VERSION",
                   help="API group and version used for serializing audit events written to log (default "
                        "audit.k8s.io/v1, the only one)")
    g.add_argument("--audit-log-compress", type=flags.go_bool, default=False, nargs="?", const=True, metavar="BOOL",
                   help="if set, the rotated log files will be compressed using gzip")


def from_args(args: argparse.Namespace) -> AuditOptions:
    return AuditOptions(policy_file=args.audit_policy_file, log_path=args.audit_log_path,
                        log_maxage=args.audit_log_maxage, log_maxbackup=args.audit_log_maxbackup,
                        log_maxsize=args.audit_log_maxsize, log_format=args.audit_log_format,
                        log_mode=args.audit_log_mode, log_batch_buffer_size=args.audit_log_batch_buffer_size,
                        log_compress=args.audit_log_compress, log_version=args.audit_log_version)


def _int(text: str) -> int:
    """An integer (negative ones are refused by validate, with upstream's message)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


