"""The --audit-* options, their checks and what they build: the policy evaluator and the log
backend (the flags themselves: cmd/audit.py).

    kubeplane up --audit-policy-file policy.yaml --audit-log-path audit.log

Auditing needs both a policy and a log path; with only one of them nothing is audited, as
upstream (which logs why). Upstream: AuditOptions, AuditLogOptions and AuditBatchOptions
(apiserver/pkg/server/options/audit.go), with kube-apiserver's defaults.
"""
from __future__ import annotations

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
    log_version: str = p.GROUP_VERSION

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
        if self.log_version.count("/") > 1:
            errs.append(f"unexpected GroupVersion string: {self.log_version}")
        elif self.log_version != p.GROUP_VERSION:      # upstream: validateGroupVersionString
            errs.append(f'invalid group version, allowed versions are ["{p.GROUP_VERSION}"]')
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


def _go_q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
