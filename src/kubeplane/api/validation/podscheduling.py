"""A pod spec's scheduling fields: affinity and topologySpreadConstraints.

Upstream: validateAffinity, validateNodeAffinity, ValidatePreferredSchedulingTerms,
validatePodAffinity, validatePodAntiAffinity, validatePodAffinityTerm(s),
validateWeightedPodAffinityTerms, ValidatePodAffinityTermSelector,
validateMatchLabelKeysAndMismatchLabelKeys, validateLabelKeys, validateTopologySpreadConstraints,
ValidateMaxSkew, validateMinDomains, ValidateTopologyKey, ValidateWhenUnsatisfiable,
ValidateSpreadConstraintNotRepeat, validateNodeInclusionPolicy,
validateMatchLabelKeysInTopologySpread (pkg/apis/core/validation/validation.go).

The options are those of a new object: label selectors are strict
(AllowInvalidLabelValueInSelector, AllowInvalidTopologySpreadConstraintLabelSelector and
AllowInvalidLabelValueInRequiredNodeAffinity are only set when the old object had such values).
Both run inside validate_pod_spec, so a valid spec is walked once (memo.py).
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import name_is_dns_label
from .nodeselector import validate_node_selector, validate_node_selector_term

Obj = dict[str, Any]
NOT_POSITIVE = "must be greater than zero"      # isNotPositiveErrorMsg
_SCHEDULE_ACTIONS = ["DoNotSchedule", "ScheduleAnyway"]
_NODE_INCLUSION_POLICIES = ["Honor", "Ignore"]


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# --- affinity ----------------------------------------------------------------------------------------


def validate_affinity(affinity: Any, path: str) -> list[FieldError]:
    """Upstream: validateAffinity"""
    if not isinstance(affinity, dict):
        return []
    errs: list[FieldError] = []
    if affinity.get("nodeAffinity") is not None:
        errs += _validate_node_affinity(_dict(affinity["nodeAffinity"]), path + ".nodeAffinity")
    for key in ("podAffinity", "podAntiAffinity"):     # validatePodAffinity, validatePodAntiAffinity
        if affinity.get(key) is not None:
            errs += _validate_pod_affinity(_dict(affinity[key]), f"{path}.{key}")
    return errs


def _validate_node_affinity(na: Obj, path: str) -> list[FieldError]:
    """Upstream: validateNodeAffinity, ValidatePreferredSchedulingTerms"""
    errs: list[FieldError] = []
    required = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        errs += validate_node_selector(_dict(required), path + ".requiredDuringSchedulingIgnoredDuringExecution")
    preferred_path = path + ".preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(_list(na.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        term = _dict(term)
        errs += _weight(term.get("weight", 0), f"{preferred_path}[{i}].weight")
        # upstream always allows invalid label values in a preferred term: it can still
        # succeed on a cluster of one node
        errs += validate_node_selector_term(_dict(term.get("preference")), f"{preferred_path}[{i}].preference",
                                            allow_invalid_label_value=True)
    return errs


def _weight(weight: Any, path: str) -> list[FieldError]:
    if isinstance(weight, int) and 0 < weight <= 100:
        return []
    return [errors.invalid(path, weight, "must be in the range 1-100")]


def _validate_pod_affinity(pa: Obj, path: str) -> list[FieldError]:
    """Upstream: validatePodAffinity / validatePodAntiAffinity (the same rules)."""
    errs: list[FieldError] = []
    required_path = path + ".requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(_list(pa.get("requiredDuringSchedulingIgnoredDuringExecution"))):
        errs += validate_pod_affinity_term(_dict(term), f"{required_path}[{i}]")
    preferred_path = path + ".preferredDuringSchedulingIgnoredDuringExecution"
    for j, weighted in enumerate(_list(pa.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        weighted = _dict(weighted)
        errs += _weight(weighted.get("weight", 0), f"{preferred_path}[{j}].weight")
        errs += validate_pod_affinity_term(_dict(weighted.get("podAffinityTerm")),
                                           f"{preferred_path}[{j}].podAffinityTerm")
    return errs


def validate_pod_affinity_term(term: Obj, path: str) -> list[FieldError]:
    """Upstream: validatePodAffinityTerm, ValidatePodAffinityTermSelector"""
    errs = m.validate_label_selector(term.get("labelSelector"), path + ".labelSelector")
    errs += m.validate_label_selector(term.get("namespaceSelector"), path + ".namespaceSelector")
    for name in _list(term.get("namespaces")):
        # upstream's path is `namespace`, singular
        errs += [errors.invalid(path + ".namespace", name, msg) for msg in name_is_dns_label(str(name), False)]
    errs += _match_and_mismatch_label_keys(path, _list(term.get("matchLabelKeys")),
                                           _list(term.get("mismatchLabelKeys")), term.get("labelSelector"))
    topology_key = term.get("topologyKey") or ""
    if not topology_key:
        errs.append(errors.required(path + ".topologyKey", "can not be empty"))
    return errs + m.validate_label_name(str(topology_key), path + ".topologyKey")


def _selector_keys(selector: Obj) -> set[str]:
    keys = set(_dict(selector.get("matchLabels")))
    keys.update(str(_dict(e).get("key", "")) for e in _list(selector.get("matchExpressions")))
    return keys


def _match_and_mismatch_label_keys(path: str, match: list[Any], mismatch: list[Any], selector: Any) -> list[FieldError]:
    """Upstream: validateMatchLabelKeysAndMismatchLabelKeys"""
    errs = _label_keys(path + ".matchLabelKeys", match, selector)
    errs += _label_keys(path + ".mismatchLabelKeys", mismatch, selector)
    if isinstance(selector, dict):
        # A key of matchLabelKeys that the selector names twice: once as the In expression the
        # pod strategy merged in from matchLabelKeys, once from the user. The path is upstream's
        # (the term indexed, not matchLabelKeys).
        index = {key: i for i, key in enumerate(match)}
        seen = set(_dict(selector.get("matchLabels")))
        for expr in _list(selector.get("matchExpressions")):
            key = _dict(expr).get("key", "")
            if key in index and key in seen:
                errs.append(errors.invalid(f"{path}[{index[key]}]", key, "exists in both matchLabelKeys and labelSelector"))
            seen.add(key)
    mismatch_set = set(map(str, mismatch))
    for i, key in enumerate(match):
        if key in mismatch_set:
            errs.append(errors.invalid(f"{path}.matchLabelKeys[{i}]", key,
                                       "exists in both matchLabelKeys and mismatchLabelKeys"))
    return errs


def _label_keys(path: str, keys: list[Any], selector: Any) -> list[FieldError]:
    """Upstream: validateLabelKeys"""
    if not keys:
        return []
    if selector is None:
        return [errors.forbidden(path, "must not be specified when labelSelector is not set")]
    errs: list[FieldError] = []
    for i, key in enumerate(keys):
        errs += m.validate_label_name(str(key), f"{path}[{i}]")
    return errs


# --- topologySpreadConstraints ------------------------------------------------------------------------


def validate_topology_spread_constraints(constraints: Any, path: str) -> list[FieldError]:
    """Upstream: validateTopologySpreadConstraints"""
    constraints = _list(constraints)
    errs: list[FieldError] = []
    for i, c in enumerate(constraints):
        c = _dict(c)
        sub = f"{path}[{i}]"
        max_skew = c.get("maxSkew", 0)
        if not isinstance(max_skew, int) or max_skew <= 0:                        # ValidateMaxSkew
            errs.append(errors.invalid(sub + ".maxSkew", max_skew, NOT_POSITIVE))
        topology_key, action = c.get("topologyKey") or "", c.get("whenUnsatisfiable") or ""
        if not topology_key:                                                      # ValidateTopologyKey
            errs.append(errors.required(sub + ".topologyKey", "can not be empty"))
        if action not in _SCHEDULE_ACTIONS:                                       # ValidateWhenUnsatisfiable
            errs.append(errors.not_supported(sub + ".whenUnsatisfiable", action, _SCHEDULE_ACTIONS))
        if any((_dict(r).get("topologyKey") or "", _dict(r).get("whenUnsatisfiable") or "") == (topology_key, action)
               for r in constraints[i + 1:]):                                     # ValidateSpreadConstraintNotRepeat
            errs.append(errors.duplicate(sub + ".{topologyKey, whenUnsatisfiable}", f"{{{topology_key}, {action}}}"))
        errs += _min_domains(sub + ".minDomains", c.get("minDomains"), action)
        for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):                    # validateNodeInclusionPolicy
            policy = c.get(key)
            if policy is not None and policy not in _NODE_INCLUSION_POLICIES:
                errs.append(errors.not_supported(f"{sub}.{key}", policy, _NODE_INCLUSION_POLICIES))
        errs += _match_label_keys_in_topology_spread(sub + ".matchLabelKeys", _list(c.get("matchLabelKeys")),
                                                     c.get("labelSelector"))
        errs += m.validate_label_selector(c.get("labelSelector"), sub + ".labelSelector")
    return errs


def _min_domains(path: str, min_domains: Any, action: str) -> list[FieldError]:
    """Upstream: validateMinDomains"""
    if min_domains is None:
        return []
    errs: list[FieldError] = []
    if not isinstance(min_domains, int) or min_domains <= 0:
        errs.append(errors.invalid(path, min_domains, NOT_POSITIVE))
    if action != "DoNotSchedule":
        errs.append(errors.invalid(path, min_domains,
                                   f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"))
    return errs


def _match_label_keys_in_topology_spread(path: str, keys: list[Any], selector: Any) -> list[FieldError]:
    """Upstream: validateMatchLabelKeysInTopologySpread"""
    if not keys:
        return []
    errs: list[FieldError] = []
    if isinstance(selector, dict):
        selector_keys = _selector_keys(selector)
    else:
        selector_keys = set()
        errs.append(errors.forbidden(path, "must not be specified when labelSelector is not set"))
    for i, key in enumerate(keys):
        errs += m.validate_label_name(str(key), f"{path}[{i}]")
        if key in selector_keys:
            errs.append(errors.invalid(f"{path}[{i}]", key, "exists in both matchLabelKeys and labelSelector"))
    return errs
