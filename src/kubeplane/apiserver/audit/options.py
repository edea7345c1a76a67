"""The --audit-* options, their checks and what they build: the policy evaluator and the log
and webhook backends (the flags themselves: cmd/audit.py).

    kubeplane up --audit-policy-file policy.yaml --audit-log-path audit.log
    kubeplane up --audit-policy-file policy.yaml --audit-webhook-config-file receiver.kubeconfig

Auditing needs a policy and a backend (a log path, a webhook configuration, or both: every
event goes to each); without one of them nothing is audited, as upstream (which logs why).
Each backend is wrapped as upstream's ApplyTo does: its mode and batching (buffered.py), then
truncation (truncate.py). Upstream: AuditOptions, AuditLogOptions, AuditWebhookOptions,
AuditBatchOptions and AuditTruncateOptions (apiserver/pkg/server/options/audit.go), with
kube-apiserver's defaults (but the log's mode: see log.py).
"""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import log as auditlog
from . import policy as p
from . import webhook as auditwebhook
from .buffered import BatchOptions
from .truncate import NO_TRUNCATE, TruncateOptions, UnionBackend

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
    log_batch_max_size: int = 1
    log_batch_max_wait: float = 0.0       # seconds
    log_batch_throttle_enable: bool = False
    log_batch_throttle_qps: float = 0.0
    log_batch_throttle_burst: int = 0
    log_truncate: TruncateOptions = NO_TRUNCATE
    log_compress: bool = False
    log_version: str = p.GROUP_VERSION
    webhook_config_file: str = ""       # a kubeconfig naming the receiver
    webhook_initial_backoff: float = auditwebhook.DEFAULT_INITIAL_BACKOFF
    webhook_batch: BatchOptions = auditwebhook.DEFAULT_BATCH
    webhook_truncate: TruncateOptions = NO_TRUNCATE
    webhook_version: str = p.GROUP_VERSION

    @property
    def log_batch(self) -> BatchOptions:
        return BatchOptions(self.log_mode, self.log_batch_buffer_size, self.log_batch_max_size,
                            self.log_batch_max_wait, self.log_batch_throttle_enable, self.log_batch_throttle_qps,
                            self.log_batch_throttle_burst)

    def validate(self) -> list[str]:
        """Upstream: AuditLogOptions.Validate and AuditWebhookOptions.Validate (each only when
        its backend is on) — their messages."""
        errs = []
        if self.log_path:
            errs += self.log_batch.validate("log")
            errs += self.log_truncate.validate("log")
            errs += _validate_group_version(self.log_version)
            errs += self._validate_log_file()
        if self.webhook_config_file:
            errs += self.webhook_batch.validate("webhook")
            errs += self.webhook_truncate.validate("webhook")
            errs += _validate_group_version(self.webhook_version)
        return errs

    def _validate_log_file(self) -> list[str]:
        errs = []
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
    """Check the flags, load the policy, open the log and the webhook and set api.audit;
    ValueError (upstream's message) if any of it fails. Nothing is audited without a policy
    and a backend. Upstream: AuditOptions.ApplyTo."""
    errs = opts.validate()
    if errs:
        raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    policy = opts.load_policy()
    if policy is None:
        for name, on in (("log", opts.log_path), ("webhook", opts.webhook_config_file)):
            if on:
                log.warning("No audit policy file provided, no events will be recorded for %s backend", name)
        return None
    if not opts.log_path and not opts.webhook_config_file:
        log.warning("No audit backend configured (--audit-log-path, --audit-webhook-config-file), "
                    "no events will be recorded")
        return None
    backends: list[auditlog.Backend] = []
    if opts.webhook_config_file:
        backends.append(opts.webhook_truncate.wrap(webhook_backend(opts)))
    if opts.log_path:
        backends.insert(0, opts.log_truncate.wrap(log_backend(opts)))
    from . import metrics
    from .filter import Auditor
    metrics.register()
    api.audit = Auditor(api, p.PolicyRuleEvaluator(policy), backends[0] if len(backends) == 1 else
                        UnionBackend(*backends))
    return api.audit


def log_backend(opts: AuditOptions) -> auditlog.LogBackend:
    """Upstream: AuditLogOptions.getWriter + newBackend."""
    try:
        out = opts.writer()
    except OSError as err:
        raise ValueError(f"ensureLogFile: {err.strerror or err}: {opts.log_path}") from None
    return auditlog.LogBackend(out, fmt=opts.log_format, mode=opts.log_mode, buffer_size=opts.log_batch_buffer_size,
                               close=opts.log_path != "-", throttle=opts.log_batch.throttle(),
                               max_batch_size=opts.log_batch_max_size)


def webhook_backend(opts: AuditOptions) -> auditwebhook.WebhookBackend:
    """Upstream: AuditWebhookOptions.newUntruncatedBackend."""
    try:
        client = auditwebhook.WebhookClient.from_kubeconfig(opts.webhook_config_file)
    except ValueError as err:
        raise ValueError(f"initializing audit webhook: {err}") from None
    return auditwebhook.WebhookBackend(client, batch=opts.webhook_batch, initial_backoff=opts.webhook_initial_backoff)


def _validate_group_version(gv: str) -> list[str]:
    """Upstream: validateGroupVersionString."""
    if gv.count("/") > 1:
        return [f"unexpected GroupVersion string: {gv}"]
    if gv != p.GROUP_VERSION:
        return [f'invalid group version, allowed versions are ["{p.GROUP_VERSION}"]']
    return []


def _go_q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
