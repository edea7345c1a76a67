"""A pod spec's dnsConfig.

Upstream: validatePodDNSConfig and its limits MaxDNSNameservers, MaxDNSSearchPaths,
MaxDNSSearchListChars (pkg/apis/core/validation/validation.go), which come from libc's resolver.
Search domains take the relaxed rule (underscores allowed, "." alone allowed): the
RelaxedDNSSearchValidation gate is GA and locked on since 1.34.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from .ip import is_valid_ip
from .names import is_dns1123_subdomain_with_underscore

MAX_DNS_NAMESERVERS = 3
MAX_DNS_SEARCH_PATHS = 32
MAX_DNS_SEARCH_LIST_CHARS = 2048


def validate_pod_dns_config(config: Any, dns_policy: Any, path: str) -> list[FieldError]:
    """Upstream: validatePodDNSConfig"""
    if dns_policy == "None":
        if config is None:
            return [errors.required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not (config or {}).get("nameservers"):
            return [errors.required(path + ".nameservers",
                                    "must provide at least one DNS nameserver when `dnsPolicy` is None")]
    if not isinstance(config, dict):
        return []
    errs: list[FieldError] = []
    nameservers = config.get("nameservers") or []
    if len(nameservers) > MAX_DNS_NAMESERVERS:
        errs.append(errors.invalid(path + ".nameservers", nameservers,
                                   f"must not have more than {MAX_DNS_NAMESERVERS} nameservers"))
    for i, ns in enumerate(nameservers):
        errs += is_valid_ip(f"{path}.nameservers[{i}]", str(ns))
    searches = [str(s) for s in config.get("searches") or []]
    if len(searches) > MAX_DNS_SEARCH_PATHS:
        errs.append(errors.invalid(path + ".searches", searches,
                                   f"must not have more than {MAX_DNS_SEARCH_PATHS} search paths"))
    if len(" ".join(searches)) > MAX_DNS_SEARCH_LIST_CHARS:       # the spaces between them count
        errs.append(errors.invalid(path + ".searches", searches,
                                   f"must not have more than {MAX_DNS_SEARCH_LIST_CHARS} characters (including "
                                   "spaces) in the search list"))
    for i, search in enumerate(searches):
        if search != ".":
            search = search.removesuffix(".")
            errs += [errors.invalid(f"{path}.searches[{i}]", search, msg)
                     for msg in is_dns1123_subdomain_with_underscore(search)]
    for i, option in enumerate(config.get("options") or []):
        if not (option or {}).get("name"):
            errs.append(errors.required(f"{path}.options[{i}]", "must not be empty"))
    return errs
