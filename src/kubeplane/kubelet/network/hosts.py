"""The pod's /etc/hosts, as the kubelet manages it: written to <pod dir>/etc-hosts when a
container starts and bind-mounted at /etc/hosts in its mount namespace (as the pod's
resolv.conf is), unless a volumeMount of the container is at /etc/hosts already.

    path = ensure_hosts_file(pod_dir, pod, ["10.244.0.5"], "cluster.local")

A pod with a network namespace of its own gets the managed file: localhost entries, its IP with
its hostname (spec.hostname, else the pod's name, cut at 63 characters) and, with
spec.subdomain, its FQDN <hostname>.<subdomain>.<namespace>.svc.<cluster domain>, then its
hostAliases. A pod on the host's network (hostNetwork, or every pod with --pod-network host)
gets the node's /etc/hosts with upstream's "(host network)" header and its hostAliases, and only
when it has hostAliases: without them that file says what the host's own /etc/hosts, which the
pod sees then, says (so such pods need no mount namespace of their own for it).

Upstream: makeHostsMount, ensureHostsFile, managedHostsFileContent, nodeHostsFileContent,
hostsEntriesFromHostAliases, truncatePodHostnameIfNeeded, GeneratePodHostNameAndDomain
(pkg/kubelet/kubelet_pods.go).
"""
from __future__ import annotations

import logging
import os
import pathlib
from typing import Any

log = logging.getLogger(__name__)

ETC_HOSTS = "/etc/hosts"
FILE_NAME = "etc-hosts"                   # upstream's getEtcHostsPath: <pod dir>/etc-hosts
MANAGED_HOSTS_HEADER = "# Kubernetes-managed hosts file.\n"
MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n"
HOSTNAME_MAX_LEN = 63


def pod_hostname_and_domain(pod: Any, cluster_domain: str) -> tuple[str, str]:
    """(hostname, host domain) of the pod. Upstream: GeneratePodHostNameAndDomain (the API
    server has validated hostname and subdomain as DNS labels)."""
    spec, m = pod.spec, pod.metadata
    hostname = (spec.hostname if spec is not None and spec.hostname else m.name) or ""
    if len(hostname) > HOSTNAME_MAX_LEN:                 # upstream: truncatePodHostnameIfNeeded
        hostname = hostname[:HOSTNAME_MAX_LEN].rstrip("-.")
    domain = f"{spec.subdomain}.{m.namespace}.svc.{cluster_domain}" if spec is not None and spec.subdomain else ""
    return hostname, domain


def managed_hosts_file_content(host_ips: list[str], hostname: str, domain: str, aliases: Any) -> str:
    out = [MANAGED_HOSTS_HEADER,
           "127.0.0.1\tlocalhost\n",
           "::1\tlocalhost ip6-localhost ip6-loopback\n",
           "fe00::0\tip6-localnet\n",
           "fe00::0\tip6-mcastprefix\n",
           "fe00::1\tip6-allnodes\n",
           "fe00::2\tip6-allrouters\n"]
    for ip in host_ips:
        out.append(f"{ip}\t{hostname}.{domain}\t{hostname}\n" if domain else f"{ip}\t{hostname}\n")
    return "".join(out) + host_aliases_entries(aliases)


def node_hosts_file_content(node_hosts: str, aliases: Any) -> str:
    return MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK + node_hosts + host_aliases_entries(aliases)


def host_aliases_entries(aliases: Any) -> str:
    """One line per hostAlias: its IP, then its hostnames, tab-separated."""
    if not aliases:
        return ""
    return "\n# Entries added by HostAliases.\n" + "".join(
        f"{a.ip}\t{chr(9).join(a.hostnames or ())}\n" for a in aliases)


def ensure_hosts_file(pod_dir: pathlib.Path, pod: Any, pod_ips: list[str], cluster_domain: str,
                      host_network: bool = False, node_hosts: str = ETC_HOSTS) -> pathlib.Path | None:
    """Write the pod's hosts file (mode 0644) and return its path, or None when the pod keeps
    the host's /etc/hosts (see the module docstring) or the file cannot be written."""
    aliases = pod.spec.host_aliases if pod.spec is not None else None
    try:
        if host_network:
            if not aliases:
                return None
            text = node_hosts_file_content(pathlib.Path(node_hosts).read_text(), aliases)
        else:
            if not pod_ips:              # upstream mounts it only once the pod has its IPs
                return None
            hostname, domain = pod_hostname_and_domain(pod, cluster_domain)
            text = managed_hosts_file_content(pod_ips, hostname, domain, aliases)
        path = pod_dir / FILE_NAME
        tmp = path.with_name(f".{FILE_NAME}.tmp")
        pod_dir.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as err:
        log.warning("pod %s/%s: no managed /etc/hosts: %s", pod.metadata.namespace, pod.metadata.name, err)
        return None
    return path
