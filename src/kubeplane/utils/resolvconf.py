"""resolv.conf parsing, shared by the kubelet's DNS configurer and the cluster DNS server's
forwarder (which reads the host's nameservers).

Upstream: parseResolvConf (pkg/kubelet/network/dns/dns.go)
"""
from __future__ import annotations

MAX_RESOLV_CONF_LENGTH = 10 << 20           # Upstream: maxResolveConfLength


def parse_resolv_conf(text: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(nameservers, searches, options, errors) of a resolv.conf: nameserver lines accumulate,
    the last search and options lines win, a search domain loses its trailing dot.
    Upstream: parseResolvConf"""
    nameservers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    errors: list[str] = []
    for line in text[:MAX_RESOLV_CONF_LENGTH].split("\n"):
        trimmed = line.strip()
        if trimmed.startswith("#"):
            continue
        fields = trimmed.split()
        if not fields:
            continue
        if fields[0] == "nameserver":
            if len(fields) >= 2:
                nameservers.append(fields[1])
            else:
                errors.append("nameserver list is empty ")
        elif fields[0] == "search":
            searches = [s.removesuffix(".") for s in fields[1:]]
        elif fields[0] == "options":
            options = fields[1:]
    return nameservers, searches, options, errors
