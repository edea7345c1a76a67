"""--audit-<backend>-truncate-*: events too large for a backend lose their objects, or are dropped.

Upstream: plugin/pkg/audit/truncate (backend.ProcessEvents), wrapped around a backend by
AuditTruncateOptions.wrapBackend (apiserver/pkg/server/options/audit.go), outside its batching.
An event whose JSON is larger than max_event_size and that carries objects (level Request or
RequestResponse) is sent without requestObject and responseObject, annotated
`audit.k8s.io/truncated: "true"`; if it is still too large it is dropped and the error counted
(apiserver_audit_error_total{plugin="truncate"}) and logged. Sizes are those of the JSON line
(Go's json encoder ends it with a newline too). max_batch_size splits one call's events into
batches; the audit filter hands over one event at a time, so it only bounds what one event may
be (validation: max_batch_size >= max_event_size).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import metrics
from . import policy as p

if TYPE_CHECKING:
    from .event import AuditContext
    from .log import Backend

log = logging.getLogger(__name__)

PLUGIN_NAME = "truncate"
DEFAULT_MAX_BATCH_SIZE = 10 * 1024 * 1024      # 10MB
DEFAULT_MAX_EVENT_SIZE = 100 * 1024            # 100KB


@dataclass(frozen=True, slots=True)
class TruncateOptions:
    """Upstream: AuditTruncateOptions (Enabled + truncate.Config)."""
    enabled: bool = False
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE

    def validate(self, plugin: str) -> list[str]:
        """Upstream: AuditTruncateOptions.Validate — its messages."""
        if self.max_event_size <= 0:
            return [f"invalid audit truncate {plugin} max event size {self.max_event_size}, must be a positive number"]
        if self.max_batch_size < self.max_event_size:
            return [f"invalid audit truncate {plugin} max batch size {self.max_batch_size}, must be greater than "
                    f"max event size ({self.max_event_size})"]
        return []

    def wrap(self, delegate: Backend) -> Backend:
        return TruncateBackend(delegate, self.max_event_size) if self.enabled else delegate


NO_TRUNCATE = TruncateOptions()        # the flags' defaults: off


class TruncateBackend:
    """Upstream: truncate.backend (see the module docstring)."""

    def __init__(self, delegate: Backend, max_event_size: int) -> None:
        self.delegate = delegate
        self.max_event_size = max_event_size
        self.dropped = 0

    def process(self, ac: AuditContext, stage: str, stage_timestamp: str, line: bytes | None = None) -> Any:
        line = ac.encode(stage, stage_timestamp)
        if len(line) > self.max_event_size and ac.level >= p.RANK[p.REQUEST]:
            line = ac.encode(stage, stage_timestamp, truncated=True)
        if len(line) > self.max_event_size:
            self.dropped += 1
            metrics.plugin_error(PLUGIN_NAME)
            log.error("Error in audit plugin 'truncate' affecting 1 audit events: event is too large even after "
                      "truncating", extra={"auditID": ac.audit_id, "stage": stage})
            return True
        return self.delegate.process(ac, stage, stage_timestamp, line)

    def shutdown(self) -> None:
        self.delegate.shutdown()


class UnionBackend:
    """Every backend gets every event; handled when all of them handled it. Upstream: audit.Union."""

    def __init__(self, *backends: Backend) -> None:
        self.backends = backends

    def process(self, ac: AuditContext, stage: str, stage_timestamp: str, line: bytes | None = None) -> Any:
        results = [b.process(ac, stage, stage_timestamp) for b in self.backends]
        if all(isinstance(r, bool) for r in results):
            return all(results)
        return _all(results)

    def shutdown(self) -> None:
        for b in self.backends:
            b.shutdown()


async def _all(results: list[Any]) -> bool:
    ok = True
    for r in results:
        ok = (r if isinstance(r, bool) else bool(await r)) and ok
    return ok
