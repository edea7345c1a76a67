"""Named health checks and the answers of /healthz, /livez and /readyz, for every server.

    checks = {"healthz": [PING, NamedCheck("syncloop", check)]}
    serve(checks, "/healthz", {"verbose": ""})     -> (200, "[+]ping ok\\n[+]syncloop ok\\nhealthz check passed\\n")
    serve(checks, "/healthz/syncloop", {})          -> (200, "ok"), or (500, "internal server error: <reason>\\n")
    serve(checks, "/metrics", {})                   -> None: not a health path

Answers are (status, text) pairs: the API server (apiserver/healthz.py), the kubelet's server
and the standalone components' servers each wrap them in their own response type. The reason
of a failure is withheld from the combined endpoints because they are public; the per-check
paths carry it, and it is logged (debug). Only the last `exclude` value is honoured.

Upstream: k8s.io/apiserver pkg/server/healthz/healthz.go (NamedCheck, PingHealthz, LogHealthz,
handleRootHealth, adaptCheckToHandler, formatQuoted).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

ENDPOINTS = ("healthz", "livez", "readyz")
CONTENT_TYPE = "text/plain; charset=utf-8"
HEADERS = (("x-content-type-options", "nosniff"),)     # what upstream's handlers set besides the type


@dataclass(frozen=True, slots=True)
class NamedCheck:
    """A health check: `check()` returns None when healthy, else the error. Upstream: NamedCheck"""

    name: str
    check: Callable[[], Exception | None]


def _ok() -> Exception | None:
    return None


# Upstream: PingHealthz. LogHealthz fails when klog's flush has been blocked for 2 minutes;
# here a blocked log handler would block the whole event loop, and so this answer with it.
PING = NamedCheck("ping", _ok)
LOG = NamedCheck("log", _ok)


def serve(checks: Mapping[str, list[NamedCheck]], path: str, query: Mapping[str, str]) -> tuple[int, str] | None:
    """The answer for a health path (`/<endpoint>` or `/<endpoint>/<check>`) over the check
    lists by endpoint; None for any other path, including an unknown check."""
    endpoint, _, check_name = path.strip("/").partition("/")    # a check's name may hold "/"
    endpoint_checks = checks.get(endpoint)
    if endpoint_checks is None:
        return None
    if not check_name:
        return handle_root_health(endpoint, endpoint_checks, query)
    check = next((c for c in endpoint_checks if c.name == check_name), None)
    return None if check is None else adapt_check_to_handler(check)


def handle_root_health(endpoint: str, checks: list[NamedCheck], query: Mapping[str, str]) -> tuple[int, str]:
    """Run every check not excluded; 200 "ok" (or the list with ?verbose), or 500 and the list.

    Upstream: handleRootHealth
    """
    excluded = {query["exclude"]} if "exclude" in query else set()
    unknown_excluded = set(excluded)
    out: list[str] = []
    failed: list[str] = []
    for c in checks:
        if c.name in excluded:
            unknown_excluded.discard(c.name)
            out.append(f"[+]{c.name} excluded: ok\n")
            continue
        err = _run(c)
        if err is None:
            out.append(f"[+]{c.name} ok\n")
            continue
        # The reason is withheld from this public endpoint; the log and /<endpoint>/<name> have it.
        out.append(f"[-]{c.name} failed: reason withheld\n")
        failed.append(c.name)
        log.debug("health check failed", extra={"endpoint": endpoint, "check": c.name, "err": str(err)})
    if unknown_excluded:
        out.append(f"warn: some health checks cannot be excluded: no matches for {format_quoted(*sorted(unknown_excluded))}\n")
    if failed:
        return 500, f"{''.join(out)}{endpoint} check failed\n"     # http.Error: the message plus a newline
    if "verbose" not in query:           # present with any value, as upstream
        return 200, "ok"
    return 200, f"{''.join(out)}{endpoint} check passed\n"


def adapt_check_to_handler(check: NamedCheck) -> tuple[int, str]:
    """One check on its own path, with the reason. Upstream: adaptCheckToHandler"""
    err = _run(check)
    return (200, "ok") if err is None else (500, f"internal server error: {err}\n")


def _run(check: NamedCheck) -> Exception | None:
    try:
        return check.check()
    except Exception as err:  # noqa: BLE001 - a broken check fails itself, not the endpoint
        return err


def format_quoted(*names: str) -> str:
    """Go's %q of each name, joined by commas. Upstream: formatQuoted"""
    return ",".join('"' + n.replace("\\", "\\\\").replace('"', '\\"') + '"' for n in names)
