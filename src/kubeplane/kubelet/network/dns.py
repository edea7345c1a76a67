"""The kubelet's DNS configurer: what a pod's /etc/resolv.conf says.

    c = Configurer(recorder, node_ref, node_ips=[], cluster_dns=["10.96.0.10"],
                   cluster_domain="cluster.local", resolver_config="/etc/resolv.conf")
    c.pod_resolv_conf(pod)   # "search default.svc.cluster.local svc.cluster.local cluster.local ...\n
                             #  nameserver 10.96.0.10\noptions ndots:5\n"

dnsPolicy ClusterFirst (a pod not on the host network) and ClusterFirstWithHostNet: the cluster
DNS servers only, search `<ns>.svc.<domain> svc.<domain> <domain>` then the host's, options
ndots:5. Default (and ClusterFirst on the host network): the host's resolv.conf. None: nothing
but the pod's dnsConfig. A pod's dnsConfig is appended (nameservers and searches deduplicated,
options merged by name, the pod's winning). Then the limits: 3 nameservers, 32 search domains
of at most 253 characters each and 2048 in all (ExpandedDNSConfig, GA since 1.28), with
upstream's DNSConfigForming events when something had to be left out.

The process runtime writes pod_resolv_conf(pod) to <pod dir>/resolv.conf
(ProcessRuntime.resolv_conf_path); a mount namespace per pod binds it at /etc/resolv.conf.

Upstream: pkg/kubelet/network/dns/dns.go (Configurer, GetPodDNS, parseResolvConf,
formDNS*FitsLimits, mergeDNSOptions, appendDNSConfig); the file's layout is containerd's
(pkg/cri/sbserver sandbox_run.go parseDNSOptions: search, nameserver, options).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ...utils.resolvconf import MAX_RESOLV_CONF_LENGTH, parse_resolv_conf

log = logging.getLogger(__name__)

DEFAULT_DNS_OPTIONS = ("ndots:5",)          # Upstream: defaultDNSOptions
MAX_DNS_NAMESERVERS = 3                     # Upstream: validation.MaxDNSNameservers
MAX_DNS_SEARCH_PATHS = 32                   # Upstream: validation.MaxDNSSearchPaths (expanded)
MAX_DNS_SEARCH_LIST_CHARS = 2048            # Upstream: validation.MaxDNSSearchListChars (expanded)
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

DNS_CLUSTER_FIRST_WITH_HOST_NET = "ClusterFirstWithHostNet"
DNS_CLUSTER_FIRST = "ClusterFirst"
DNS_DEFAULT = "Default"
DNS_NONE = "None"

POD_DNS_CLUSTER, POD_DNS_HOST, POD_DNS_NONE = "cluster", "host", "none"   # Upstream: podDNSType


class ResolvConfError(ValueError):
    pass


@dataclass
class DNSConfig:
    """Upstream: runtimeapi.DNSConfig"""
    servers: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)


def omit_duplicates(strs: list[str]) -> list[str]:
    """Upstream: omitDuplicates"""
    return list(dict.fromkeys(strs))


def get_pod_dns_type(pod: Any) -> str:
    """Upstream: getPodDNSType. ValueError for a policy the API server would have refused."""
    policy = pod.spec.dns_policy if pod.spec is not None else None
    host_network = bool(pod.spec is not None and pod.spec.host_network)
    if policy == DNS_NONE:
        return POD_DNS_NONE
    if policy == DNS_CLUSTER_FIRST_WITH_HOST_NET:
        return POD_DNS_CLUSTER
    if policy == DNS_CLUSTER_FIRST:
        return POD_DNS_HOST if host_network else POD_DNS_CLUSTER
    if policy == DNS_DEFAULT:
        return POD_DNS_HOST
    raise ValueError(f"invalid DNSPolicy={policy}")


def merge_dns_options(existing: list[str], pod_options: list[Any]) -> list[str]:
    """The pod's dnsConfig options override those of the same name.
    Upstream: mergeDNSOptions (whose map leaves the order to chance; here: first seen)"""
    merged: dict[str, str] = {}
    for op in existing:
        name, _, value = op.partition(":")
        merged[name] = value
    for op in pod_options:
        merged[op.name or ""] = op.value or ""
    return [f"{k}:{v}" if v else k for k, v in merged.items()]


def append_dns_config(existing: DNSConfig, pod_config: Any) -> DNSConfig:
    """Upstream: appendDNSConfig"""
    existing.servers = omit_duplicates(existing.servers + list(pod_config.nameservers or ()))
    existing.searches = omit_duplicates(existing.searches + list(pod_config.searches or ()))
    existing.options = merge_dns_options(existing.options, list(pod_config.options or ()))
    return existing


def format_pod(pod: Any) -> str:
    """Upstream: format.Pod: "name_namespace(uid)"."""
    m = pod.metadata
    return f"{m.name}_{m.namespace}({m.uid or ''})"


class Configurer:
    """Upstream: Configurer (dns.go). recorder: an EventRecorder (event(obj, type, reason,
    message)) or None; node_ref: the node's ObjectReference (a dict or typed)."""

    def __init__(self, recorder: Any, node_ref: Any, node_ips: list[str], cluster_dns: list[str],
                 cluster_domain: str, resolver_config: str) -> None:
        self.recorder = recorder
        self.node_ref = node_ref
        self.node_ips = list(node_ips)
        self.cluster_dns = list(cluster_dns)
        self.cluster_domain = cluster_domain
        self.resolver_config = resolver_config

    def _event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        if obj is None:
            log.warning("%s: %s", reason, message)
        elif self.recorder is not None:
            self.recorder.event(obj, type_, reason, message)

    def form_dns_search_fits_limits(self, composed: list[str], pod: Any) -> list[str]:
        """Upstream: formDNSSearchFitsLimits"""
        exceeded = False
        if len(composed) > MAX_DNS_SEARCH_PATHS:
            composed = composed[:MAX_DNS_SEARCH_PATHS]
            exceeded = True
        # glibc 2.28 aborts on a search path longer than 255 characters: leave them out
        kept = [s for s in composed if len(s) <= DNS1123_SUBDOMAIN_MAX_LENGTH]
        exceeded = exceeded or len(kept) != len(composed)
        composed = kept
        line_len = len(" ".join(composed))
        if line_len > MAX_DNS_SEARCH_LIST_CHARS:
            cut_num = cut_len = 0
            for s in reversed(composed):
                cut_len += len(s) + 1
                cut_num += 1
                if line_len - cut_len <= MAX_DNS_SEARCH_LIST_CHARS:
                    break
            composed = composed[:len(composed) - cut_num]
            exceeded = True
        if exceeded:
            msg = ("Search Line limits were exceeded, some search paths have been omitted, "
                   f"the applied search line is: {' '.join(composed)}")
            self._event(pod, "Warning", "DNSConfigForming", msg)
            log.error("Search Line limits exceeded: %s", msg)
        return composed

    def form_dns_nameservers_fits_limits(self, nameservers: list[str], pod: Any) -> list[str]:
        """Upstream: formDNSNameserversFitsLimits"""
        if len(nameservers) > MAX_DNS_NAMESERVERS:
            nameservers = nameservers[:MAX_DNS_NAMESERVERS]
            msg = ("Nameserver limits were exceeded, some nameservers have been omitted, "
                   f"the applied nameserver line is: {' '.join(nameservers)}")
            self._event(pod, "Warning", "DNSConfigForming", msg)
            log.error("Nameserver limits exceeded: %s", msg)
        return nameservers

    def form_dns_config_fits_limits(self, config: DNSConfig, pod: Any) -> DNSConfig:
        config.servers = self.form_dns_nameservers_fits_limits(config.servers, pod)
        config.searches = self.form_dns_search_fits_limits(config.searches, pod)
        return config

    def generate_searches_for_dns_cluster_first(self, host_search: list[str], pod: Any) -> list[str]:
        """Upstream: generateSearchesForDNSClusterFirst"""
        if not self.cluster_domain:
            return host_search
        ns_svc = f"{pod.metadata.namespace}.svc.{self.cluster_domain}"
        svc = f"svc.{self.cluster_domain}"
        return omit_duplicates([ns_svc, svc, self.cluster_domain, *host_search])

    def check_limits_for_resolv_conf(self) -> None:
        """Events on the node when the host's resolv.conf cannot fit a pod's.
        Upstream: CheckLimitsForResolvConf"""
        try:
            text = self._read_resolver_config()
        except OSError as err:
            self._event(self.node_ref, "Warning", "CheckLimitsForResolvConf", str(err))
            return
        _, host_search, _, errors = parse_resolv_conf(text)
        if errors:
            self._event(self.node_ref, "Warning", "CheckLimitsForResolvConf", "; ".join(errors))
            return
        limit = MAX_DNS_SEARCH_PATHS - (3 if self.cluster_domain else 0)
        path = self.resolver_config
        if len(host_search) > limit:
            msg = f"Resolv.conf file '{path}' contains search line consisting of more than {limit} domains!"
        elif any(len(s) > DNS1123_SUBDOMAIN_MAX_LENGTH for s in host_search):
            msg = (f"Resolv.conf file \"{path}\" contains a search path which length is more than allowed "
                   f"{DNS1123_SUBDOMAIN_MAX_LENGTH} chars!")
        elif len(" ".join(host_search)) > MAX_DNS_SEARCH_LIST_CHARS:
            msg = (f"Resolv.conf file '{path}' contains search line which length is more than allowed "
                   f"{MAX_DNS_SEARCH_LIST_CHARS} chars!")
        else:
            return
        self._event(self.node_ref, "Warning", "CheckLimitsForResolvConf", msg)

    def _read_resolver_config(self) -> str:
        with open(self.resolver_config, encoding="utf-8", errors="replace") as f:
            return f.read(MAX_RESOLV_CONF_LENGTH)

    def get_host_dns_config(self) -> DNSConfig:
        """Upstream: getHostDNSConfig. OSError or ResolvConfError when unreadable."""
        if not self.resolver_config:
            return DNSConfig()
        servers, searches, options, errors = parse_resolv_conf(self._read_resolver_config())
        if errors:
            raise ResolvConfError("; ".join(errors))
        return DNSConfig(servers, searches, options)

    def get_pod_dns(self, pod: Any) -> DNSConfig:
        """Upstream: GetPodDNS"""
        config = self.get_host_dns_config()
        try:
            dns_type = get_pod_dns_type(pod)
        except ValueError as err:
            log.error("Failed to get DNS type for pod. Falling back to DNSClusterFirst policy: %s", err)
            dns_type = POD_DNS_CLUSTER
        if dns_type == POD_DNS_NONE:
            config = DNSConfig()
        elif dns_type == POD_DNS_CLUSTER and self.cluster_dns:
            # the cluster DNS is the pod's only nameserver: it forwards what it does not hold
            config.servers = list(self.cluster_dns)
            config.searches = self.generate_searches_for_dns_cluster_first(config.searches, pod)
            config.options = list(DEFAULT_DNS_OPTIONS)
        else:
            if dns_type == POD_DNS_CLUSTER:
                msg = (f"kubelet does not have ClusterDNS IP configured and cannot create Pod using "
                       f"\"{DNS_CLUSTER_FIRST}\" policy. Falling back to \"{DNS_DEFAULT}\" policy.")
                self._event(self.node_ref, "Warning", "MissingClusterDNS", msg)
                self._event(pod, "Warning", "MissingClusterDNS", f"pod: \"{format_pod(pod)}\". {msg}")
            if not self.resolver_config:
                # no resolv.conf (--resolv-conf=""): "the nameserver on the local machine"
                config.servers += ["::1" if ":" in ip else "127.0.0.1" for ip in self.node_ips] or ["127.0.0.1"]
                config.searches = ["."]
        if pod.spec is not None and pod.spec.dns_config is not None:
            config = append_dns_config(config, pod.spec.dns_config)
        return self.form_dns_config_fits_limits(config, pod)

    def pod_resolv_conf(self, pod: Any) -> str:
        """The pod's resolv.conf as containerd writes it (search, nameservers, options)."""
        return resolv_conf_text(self.get_pod_dns(pod))


class PodEventRecorder:
    """An EventRecorder for the configurer in a kubelet of several nodes: a pod's event goes to
    its node's recorder (recorder_for(pod uid)); the node events have no node_ref here and are
    logged only."""

    def __init__(self, recorder_for: Any) -> None:
        self.recorder_for = recorder_for

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        from ...api.types import core_v1
        m = getattr(obj, "metadata", None)
        recorder = self.recorder_for(m.uid or "") if m is not None else None
        if recorder is not None:
            ref = core_v1.ObjectReference(kind="Pod", api_version="v1", name=m.name, namespace=m.namespace, uid=m.uid)
            recorder.event(ref, type_, reason, message)


def resolv_conf_text(config: DNSConfig) -> str:
    """Upstream: containerd parseDNSOptions (one search line, a nameserver line each, options)."""
    out = ""
    if config.searches:
        out += f"search {' '.join(config.searches)}\n"
    for s in config.servers:
        out += f"nameserver {s}\n"
    if config.options:
        out += f"options {' '.join(config.options)}\n"
    return out
