"""The audit policy (audit.k8s.io/v1 Policy): loading, validation and the rule checker.

    apiVersion: audit.k8s.io/v1
    kind: Policy
    omitStages: [RequestReceived]
    rules:
    - level: None
      users: ["system:kube-proxy"]
      verbs: ["watch"]
    - level: RequestResponse
      resources: [{group: "", resources: ["pods", "pods/log", "*/status"]}]
    - level: Metadata

The first rule that matches a request decides its level, the stages left out (the policy's
omitStages joined with the rule's) and whether managedFields are left out of the request and
response objects; no rule matching means level None.

Upstream: LoadPolicyFromBytes (apiserver/pkg/audit/policy/reader.go), ValidatePolicy
(apiserver/pkg/apis/audit/validation/validation.go), policyRuleEvaluator and ruleMatches
(apiserver/pkg/audit/policy/checker.go).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ...api import errors
from ...api.validation.names import is_dns1123_subdomain
from ..authorization.authorizer import Attributes

log = logging.getLogger(__name__)

GROUP_VERSION = "audit.k8s.io/v1"

# Levels, least to most detailed (Level.Less compares their ranks).
NONE, METADATA, REQUEST, REQUEST_RESPONSE = "None", "Metadata", "Request", "RequestResponse"
LEVELS = (NONE, METADATA, REQUEST, REQUEST_RESPONSE)
RANK = {lv: i for i, lv in enumerate(LEVELS)}

# Stages. Upstream: audit.k8s.io/v1 Stage
REQUEST_RECEIVED, RESPONSE_STARTED, RESPONSE_COMPLETE, PANIC = (
    "RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
STAGES = (REQUEST_RECEIVED, RESPONSE_STARTED, RESPONSE_COMPLETE, PANIC)


class PolicyError(ValueError):
    """The policy file could not be loaded (the message is upstream's)."""


@dataclass(frozen=True, slots=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PolicyRule:
    level: str = ""
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    rules: tuple[PolicyRule, ...] = ()
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool = False


@dataclass(frozen=True, slots=True)
class RequestAuditConfig:
    """What the policy says about one request. Upstream: audit.RequestAuditConfig"""
    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


# --- loading -----------------------------------------------------------------------------------

def load_policy_file(path: str) -> Policy:
    """Upstream: LoadPolicyFromFile — the messages of its errors included."""
    if not path:
        raise PolicyError("file path not specified")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise PolicyError(f"failed to read file path {path!r}: {err}") from None
    try:
        return load_policy(data)
    except PolicyError as err:
        raise PolicyError(f"{err}: from file {path}") from None


def load_policy(data: bytes) -> Policy:
    """Upstream: LoadPolicyFromBytes. Unknown fields are a warning (upstream falls back to
    lenient decoding); a malformed document, another kind or version, an invalid rule or no
    rules at all are errors."""
    import yaml                 # on first use: a server without a policy never loads it
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError as err:
        raise PolicyError(f"failed decoding: {_yaml_error(err)}") from None
    if not isinstance(doc, dict):
        raise PolicyError("failed decoding: couldn't get version/kind; json parse error: "
                          "json: cannot unmarshal into Go value of type struct { APIVersion string "
                          '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }')
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if not kind:
        raise PolicyError(f"failed decoding: Object 'Kind' is missing in '{_compact(data)}'")
    if api_version != GROUP_VERSION or kind != "Policy":
        group, _, version = str(api_version or "").rpartition("/")
        raise PolicyError(f'failed decoding: no kind "{kind}" is registered for version "{api_version}" '
                          'in scheme "k8s.io/apiserver/pkg/audit/scheme.go:32"'
                          if api_version else f"failed decoding: Object 'apiVersion' is missing in '{_compact(data)}'")
    unknown: list[str] = []
    policy = _policy(doc, unknown)
    if unknown:
        log.warning("Audit policy contains errors, falling back to lenient decoding: strict decoding error: %s",
                    ", ".join(f'unknown field "{u}"' for u in unknown))
    errs = validate_policy(policy)
    if errs:
        raise PolicyError(errors.aggregate(errs))
    if not policy.rules:
        raise PolicyError("loaded illegal policy with 0 rules")
    return policy


def _yaml_error(err: Any) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    return f"error converting YAML to JSON: yaml: line {mark.line + 1}: {problem}" if mark else str(err)


def _compact(data: bytes) -> str:
    return " ".join(data.decode("utf-8", "replace").split())


_POLICY_FIELDS = {"apiVersion", "kind", "metadata", "rules", "omitStages", "omitManagedFields"}
_RULE_FIELDS = {"level", "users", "userGroups", "verbs", "resources", "namespaces", "nonResourceURLs",
                "omitStages", "omitManagedFields"}
_GR_FIELDS = {"group", "resources", "resourceNames"}


def _policy(doc: dict[str, Any], unknown: list[str]) -> Policy:
    unknown.extend(k for k in doc if k not in _POLICY_FIELDS)
    rules = []
    for i, r in enumerate(_list(doc, "rules", "Policy", dict)):
        unknown.extend(f"rules[{i}].{k}" for k in r if k not in _RULE_FIELDS)
        grs = []
        for j, gr in enumerate(_list(r, "resources", "PolicyRule", dict)):
            unknown.extend(f"rules[{i}].resources[{j}].{k}" for k in gr if k not in _GR_FIELDS)
            grs.append(GroupResources(_str(gr, "group", "GroupResources"), _strings(gr, "resources", "GroupResources"),
                                      _strings(gr, "resourceNames", "GroupResources")))
        rules.append(PolicyRule(
            level=_str(r, "level", "PolicyRule"), users=_strings(r, "users", "PolicyRule"),
            user_groups=_strings(r, "userGroups", "PolicyRule"), verbs=_strings(r, "verbs", "PolicyRule"),
            resources=tuple(grs), namespaces=_strings(r, "namespaces", "PolicyRule"),
            non_resource_urls=_strings(r, "nonResourceURLs", "PolicyRule"),
            omit_stages=_strings(r, "omitStages", "PolicyRule"),
            omit_managed_fields=_bool(r, "omitManagedFields", "PolicyRule")))
    return Policy(tuple(rules), _strings(doc, "omitStages", "Policy"),
                  bool(_bool(doc, "omitManagedFields", "Policy")))


def _type_error(go_type: str, struct: str, name: str, value: Any) -> PolicyError:
    json_type = {str: "string", bool: "bool", int: "number", float: "number", list: "array",
                 dict: "object"}.get(type(value), "value")
    return PolicyError(f"failed decoding: json: cannot unmarshal {json_type} into Go struct field "
                       f"{struct}.{name} of type {go_type}")


def _list(d: dict[str, Any], name: str, struct: str, item: type) -> list[Any]:
    v = d.get(name)
    if v is None:
        return []
    if not isinstance(v, list):
        raise _type_error("[]" + ("string" if item is str else "v1." + name.capitalize()), struct, name, v)
    for x in v:
        if not isinstance(x, item):
            raise _type_error("string" if item is str else "v1.GroupResources", struct, name, x)
    return v


def _strings(d: dict[str, Any], name: str, struct: str) -> tuple[str, ...]:
    return tuple(_list(d, name, struct, str))


def _str(d: dict[str, Any], name: str, struct: str) -> str:
    v = d.get(name)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise _type_error("string", struct, name, v)
    return v


def _bool(d: dict[str, Any], name: str, struct: str) -> bool | None:
    v = d.get(name)
    if v is not None and not isinstance(v, bool):
        raise _type_error("bool", struct, name, v)
    return v


# --- validation ----------------------------------------------------------------------------------

def validate_policy(policy: Policy) -> list[errors.FieldError]:
    """Upstream: ValidatePolicy."""
    errs = _validate_omit_stages(policy.omit_stages, "omitStages")
    for i, rule in enumerate(policy.rules):
        errs.extend(_validate_rule(rule, f"rules[{i}]"))
    return errs


def _validate_rule(rule: PolicyRule, path: str) -> list[errors.FieldError]:
    errs: list[errors.FieldError] = []
    if not rule.level:
        errs.append(errors.required(f"{path}.level"))
    elif rule.level not in LEVELS:
        errs.append(errors.not_supported(f"{path}.level", rule.level, list(LEVELS)))
    for i, url in enumerate(rule.non_resource_urls):
        if url == "*":
            continue
        if not url.startswith("/"):
            errs.append(errors.invalid(f"{path}.nonResourceURLs[{i}]", url,
                                       "non-resource URL rules must begin with a '/' character"))
        if url and "*" in url[:-1]:
            errs.append(errors.invalid(f"{path}.nonResourceURLs[{i}]", url,
                                       "non-resource URL wildcards '*' must be the final character of the rule"))
    for gr in rule.resources:
        if gr.group and gr.group != "*" and (msgs := is_dns1123_subdomain(gr.group)):
            errs.append(errors.invalid(f"{path}.resources.group", gr.group, ",".join(msgs)))
        if gr.resource_names and not gr.resources:
            errs.append(errors.invalid(f"{path}.resources.resourceNames", list(gr.resource_names),
                                       "using resourceNames requires at least one resource"))
    errs.extend(_validate_omit_stages(rule.omit_stages, f"{path}.omitStages"))
    if rule.non_resource_urls and (rule.resources or rule.namespaces):
        errs.append(errors.invalid(f"{path}.nonResourceURLs", list(rule.non_resource_urls),
                                   "rules cannot apply to both regular resources and non-resource URLs"))
    return errs


def _validate_omit_stages(stages: tuple[str, ...], path: str) -> list[errors.FieldError]:
    return [errors.invalid(f"{path}[{i}]", s, "allowed stages are " + ",".join(STAGES))
            for i, s in enumerate(stages) if s not in STAGES]


# --- the checker ---------------------------------------------------------------------------------

class PolicyRuleEvaluator:
    """The level and stages a request is audited at: the first matching rule's.
    Upstream: policyRuleEvaluator (NewPolicyRuleEvaluator unions the policy's omitStages into
    every rule's)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        default = frozenset(policy.omit_stages)
        self.rules = [(r, RequestAuditConfig(
            r.level, default | frozenset(r.omit_stages),
            policy.omit_managed_fields if r.omit_managed_fields is None else r.omit_managed_fields))
            for r in policy.rules]
        self.default = RequestAuditConfig(NONE, default, policy.omit_managed_fields)

    def evaluate_policy_rule(self, a: Attributes) -> RequestAuditConfig:
        """Upstream: EvaluatePolicyRule."""
        for rule, config in self.rules:
            if rule_matches(rule, a):
                return config
        return self.default


def rule_matches(r: PolicyRule, a: Attributes) -> bool:
    """Upstream: ruleMatches."""
    if r.users and a.user.name not in r.users:
        return False
    if r.user_groups and not any(g in r.user_groups for g in a.user.groups):
        return False
    if r.verbs and a.verb not in r.verbs:
        return False
    if r.namespaces or r.resources:
        return _rule_matches_resource(r, a)
    if r.non_resource_urls:
        return not a.resource_request and any(path_matches(a.path, spec) for spec in r.non_resource_urls)
    return True


def path_matches(path: str, spec: str) -> bool:
    """Upstream: pathMatches — "*", the path itself, or a prefix ending in "*"."""
    return spec == "*" or spec == path or (spec.endswith("*") and path.startswith(spec.rstrip("*")))


def _rule_matches_resource(r: PolicyRule, a: Attributes) -> bool:
    """Upstream: ruleMatchesResource — "*" for any resource, "pods/*" for any subresource of
    pods, "*/status" for status of any resource, resourceNames limiting the names."""
    if not a.resource_request:
        return False
    if r.namespaces and a.namespace not in r.namespaces:       # cluster-scoped: ""
        return False
    if not r.resources:
        return True
    resource, sub = a.resource, a.subresource
    combined = f"{resource}/{sub}" if sub else resource
    for gr in r.resources:
        if gr.group != a.api_group and gr.group != "*":
            continue
        if not gr.resources:
            return True
        if gr.resource_names and a.name not in gr.resource_names:
            continue
        for res in gr.resources:
            if res == combined or res == "*":
                return True
            if sub and res.startswith("*/") and sub == res[2:]:
                return True
            if res.endswith("/*") and resource == res[:-2]:
                return True
    return False
