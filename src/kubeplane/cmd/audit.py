"""`up`'s --audit-* flags (apiserver/audit/options.py checks them and builds the auditor).

Upstream: AuditOptions.AddFlags (apiserver/pkg/server/options/audit.go): the log and webhook
backends' flags, each backend's batch (--audit-<backend>-mode, --audit-<backend>-batch-*) and
truncate (--audit-<backend>-truncate-*) flags, with upstream's names and defaults.
"""
from __future__ import annotations

import argparse

from ..apiserver.audit import log as auditlog
from ..apiserver.audit import truncate
from ..apiserver.audit import webhook as auditwebhook
from ..apiserver.audit.buffered import BatchOptions
from ..apiserver.audit.options import AuditOptions
from ..apiserver.audit.truncate import TruncateOptions
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
    _add_batch_flags(g, "log", BatchOptions(max_batch_size=1))
    _add_truncate_flags(g, "log")
    g.add_argument("--audit-log-version", default="audit.k8s.io/v1", metavar="GROUP/VERSION",
                   help="API group and version used for serializing audit events written to log (default "
                        "audit.k8s.io/v1, the only one)")
    g.add_argument("--audit-log-compress", type=flags.go_bool, default=False, nargs="?", const=True, metavar="BOOL",
                   help="if set, the rotated log files will be compressed using gzip")


    g.add_argument("--audit-webhook-config-file", default="", metavar="FILE",
                   help="path to a kubeconfig formatted file that defines the audit webhook configuration")
    g.add_argument("--audit-webhook-initial-backoff", type=flags.go_duration,
                   default=auditwebhook.DEFAULT_INITIAL_BACKOFF, metavar="DURATION",
                   help="the amount of time to wait before retrying the first failed request (default 10s)")
    g.add_argument("--audit-webhook-batch-initial-backoff", type=flags.go_duration, dest="audit_webhook_initial_backoff",
                   default=argparse.SUPPRESS, metavar="DURATION", help="deprecated, use --audit-webhook-initial-backoff instead")
    g.add_argument("--audit-webhook-version", default="audit.k8s.io/v1", metavar="GROUP/VERSION",
                   help="API group and version used for serializing audit events written to webhook "
                        "(default audit.k8s.io/v1)")
    d = auditwebhook.DEFAULT_BATCH
    g.add_argument("--audit-webhook-mode", default=d.mode, metavar="MODE",
                   help="strategy for sending audit events: blocking indicates sending events should block server "
                        "responses, batch causes the backend to buffer and write events asynchronously; known modes "
                        "are batch,blocking,blocking-strict (default batch)")
    g.add_argument("--audit-webhook-batch-buffer-size", type=_int, default=d.buffer_size, metavar="N",
                   help="the size of the buffer to store events before batching and writing; batch mode only "
                        "(default 10000)")
    _add_batch_flags(g, "webhook", d)
    _add_truncate_flags(g, "webhook")


def _add_batch_flags(g: argparse._ArgumentGroup, plugin: str, d: BatchOptions) -> None:
    """Upstream: AuditBatchOptions.AddFlags (the mode and buffer-size flags are added by the caller)."""
    g.add_argument(f"--audit-{plugin}-batch-max-size", type=_int, default=d.max_batch_size, metavar="N",
                   help=f"the maximum size of a batch; batch mode only (default {d.max_batch_size})")
    g.add_argument(f"--audit-{plugin}-batch-max-wait", type=flags.go_duration, default=d.max_batch_wait,
                   metavar="DURATION", help="the amount of time to wait before force writing the batch that hadn't "
                                            f"reached the max size; batch mode only (default {_go_seconds(d.max_batch_wait)})")
    g.add_argument(f"--audit-{plugin}-batch-throttle-enable", type=flags.go_bool, default=d.throttle_enable,
                   nargs="?", const=True, metavar="BOOL",
                   help=f"whether batching throttling is enabled; batch mode only (default {str(d.throttle_enable).lower()})")
    g.add_argument(f"--audit-{plugin}-batch-throttle-qps", type=_float, default=d.throttle_qps, metavar="QPS",
                   help=f"maximum average number of batches per second; batch mode only (default {d.throttle_qps:g})")
    g.add_argument(f"--audit-{plugin}-batch-throttle-burst", type=_int, default=d.throttle_burst, metavar="N",
                   help="maximum number of requests sent at the same moment if ThrottleQPS was not utilized before; "
                        f"batch mode only (default {d.throttle_burst})")


def _add_truncate_flags(g: argparse._ArgumentGroup, plugin: str) -> None:
    """Upstream: AuditTruncateOptions.AddFlags."""
    g.add_argument(f"--audit-{plugin}-truncate-enabled", type=flags.go_bool, default=False, nargs="?", const=True,
                   metavar="BOOL", help="whether event and batch truncating is enabled")
    g.add_argument(f"--audit-{plugin}-truncate-max-batch-size", type=_int, default=truncate.DEFAULT_MAX_BATCH_SIZE,
                   metavar="BYTES", help="maximum size of the batch sent to the underlying backend; a larger batch is "
                                         "split into several (default 10485760)")
    g.add_argument(f"--audit-{plugin}-truncate-max-event-size", type=_int, default=truncate.DEFAULT_MAX_EVENT_SIZE,
                   metavar="BYTES", help="maximum size of the audit event sent to the underlying backend: a larger "
                                         "event loses its request and response objects, and is discarded if that is "
                                         "not enough (default 102400)")


def _truncate(args: argparse.Namespace, plugin: str) -> TruncateOptions:
    return TruncateOptions(getattr(args, f"audit_{plugin}_truncate_enabled"),
                           getattr(args, f"audit_{plugin}_truncate_max_batch_size"),
                           getattr(args, f"audit_{plugin}_truncate_max_event_size"))


def from_args(args: argparse.Namespace) -> AuditOptions:
    return AuditOptions(
        policy_file=args.audit_policy_file, log_path=args.audit_log_path,
        log_maxage=args.audit_log_maxage, log_maxbackup=args.audit_log_maxbackup,
        log_maxsize=args.audit_log_maxsize, log_format=args.audit_log_format,
        log_mode=args.audit_log_mode, log_batch_buffer_size=args.audit_log_batch_buffer_size,
        log_batch_max_size=args.audit_log_batch_max_size, log_batch_max_wait=args.audit_log_batch_max_wait,
        log_batch_throttle_enable=args.audit_log_batch_throttle_enable,
        log_batch_throttle_qps=args.audit_log_batch_throttle_qps,
        log_batch_throttle_burst=args.audit_log_batch_throttle_burst, log_truncate=_truncate(args, "log"),
        log_compress=args.audit_log_compress, log_version=args.audit_log_version,
        webhook_config_file=args.audit_webhook_config_file, webhook_initial_backoff=args.audit_webhook_initial_backoff,
        webhook_batch=BatchOptions(args.audit_webhook_mode, args.audit_webhook_batch_buffer_size,
                                   args.audit_webhook_batch_max_size, args.audit_webhook_batch_max_wait,
                                   args.audit_webhook_batch_throttle_enable, args.audit_webhook_batch_throttle_qps,
                                   args.audit_webhook_batch_throttle_burst),
        webhook_truncate=_truncate(args, "webhook"), webhook_version=args.audit_webhook_version)


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None


def _go_seconds(seconds: float) -> str:
    """Go's Duration.String() of whole seconds: 30 -> "30s", 0 -> "0s"."""
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s}s" if m else f"{s}s"


def _int(text: str) -> int:
    """An integer (negative ones are refused by validate, with upstream's message)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


