"""Which requests are long-running: not counted in flight, not timed out by --request-timeout.

Upstream: BasicLongRunningRequestCheck (apiserver/pkg/server/filters/longrunning.go), with the
verbs and subresources kube-apiserver passes it (cmd/kube-apiserver/app/server.go).
"""
from __future__ import annotations

from ..request import RequestInfo

LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})


def is_long_running(info: RequestInfo) -> bool:
    """A watch, a proxy, or a streaming subresource (pods/log, exec, attach, portforward)."""
    if info.verb in LONG_RUNNING_VERBS:
        return True
    return info.is_resource_request and info.subresource in LONG_RUNNING_SUBRESOURCES
