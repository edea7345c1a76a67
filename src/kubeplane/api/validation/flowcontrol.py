"""flowcontrol.apiserver.k8s.io/v1 validation. Upstream: pkg/apis/flowcontrol/validation/validation.go.

Checked: FlowSchema matchingPrecedence, priorityLevelConfiguration.name, distinguisherMethod,
rules (subjects, at least one of resourceRules/nonResourceRules, the required lists);
PriorityLevelConfiguration type/limited/exempt, limitResponse and queuing bounds. Left out: the
mandatory objects' spec locks (exempt, catch-all), shuffle-sharding entropy limits.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import name_is_dns_subdomain

Obj = dict[str, Any]
SUBJECT_KINDS = ["Group", "ServiceAccount", "User"]


def _meta(obj: Obj) -> list[FieldError]:
    return m.validate_object_meta(obj.get("metadata") or {}, False, name_is_dns_subdomain)


def _subject(s: Obj, path: str) -> list[FieldError]:
    kind = s.get("kind") or ""
    if kind not in SUBJECT_KINDS:
        return [errors.not_supported(path + ".kind", kind, SUBJECT_KINDS)]
    key = {"Group": "group", "ServiceAccount": "serviceAccount", "User": "user"}[kind]
    body = s.get(key)
    if body is None:
        return [errors.required(f"{path}.{key}", f"{key} is required when subject kind is '{kind}'")]
    errs: list[FieldError] = []
    if not body.get("name"):
        errs.append(errors.required(f"{path}.{key}.name"))
    if kind == "ServiceAccount" and not body.get("namespace"):
        errs.append(errors.required(f"{path}.{key}.namespace"))
    return errs


def _rule(rule: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    subjects = rule.get("subjects") or []
    if not subjects:
        errs.append(errors.required(path + ".subjects"))
    for i, s in enumerate(subjects):
        errs += _subject(s or {}, f"{path}.subjects[{i}]")
    res, nonres = rule.get("resourceRules") or [], rule.get("nonResourceRules") or []
    if not res and not nonres:
        errs.append(errors.required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
    for i, r in enumerate(res):
        p = f"{path}.resourceRules[{i}]"
        for key in ("verbs", "apiGroups", "resources"):
            if not (r or {}).get(key):
                errs.append(errors.required(f"{p}.{key}", f"{key} must contain at least one value"))
        if not (r or {}).get("clusterScope") and not (r or {}).get("namespaces"):
            errs.append(errors.required(p + ".namespaces", "resource rules that are not cluster scoped must supply at least one namespace"))
    for i, r in enumerate(nonres):
        p = f"{path}.nonResourceRules[{i}]"
        for key in ("verbs", "nonResourceURLs"):
            if not (r or {}).get(key):
                errs.append(errors.required(f"{p}.{key}", f"{key} must contain at least one value"))
    return errs


def validate_flow_schema(fs: Obj) -> list[FieldError]:
    """Upstream: ValidateFlowSchema"""
    spec = fs.get("spec") or {}
    errs = _meta(fs)
    mp = spec.get("matchingPrecedence")
    if isinstance(mp, int) and not 1 <= mp <= 10000:
        errs.append(errors.invalid("spec.matchingPrecedence", mp, "must be between 1 and 10000, inclusive"))
    if not (spec.get("priorityLevelConfiguration") or {}).get("name"):
        errs.append(errors.required("spec.priorityLevelConfiguration.name", "must reference a priority level"))
    dm = spec.get("distinguisherMethod")
    if dm is not None and (dm or {}).get("type") not in ("ByNamespace", "ByUser"):
        errs.append(errors.not_supported("spec.distinguisherMethod.type", (dm or {}).get("type") or "", ["ByNamespace", "ByUser"]))
    for i, rule in enumerate(spec.get("rules") or []):
        errs += _rule(rule or {}, f"spec.rules[{i}]")
    return errs


def _shares(obj: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    ncs = obj.get("nominalConcurrencyShares")
    if isinstance(ncs, int) and ncs < 0:
        errs.append(errors.invalid(path + ".nominalConcurrencyShares", ncs, "must be a non-negative integer"))
    lp = obj.get("lendablePercent")
    if isinstance(lp, int) and not 0 <= lp <= 100:
        errs.append(errors.invalid(path + ".lendablePercent", lp, "must be between 0 and 100, inclusive"))
    return errs


def validate_priority_level_configuration(plc: Obj) -> list[FieldError]:
    """Upstream: ValidatePriorityLevelConfiguration"""
    spec = plc.get("spec") or {}
    errs = _meta(plc)
    t = spec.get("type") or ""
    if t == "Exempt":
        if spec.get("limited") is not None:
            errs.append(errors.forbidden("spec.limited", "must be nil if the type is not Limited"))
        errs += _shares(spec.get("exempt") or {}, "spec.exempt")
    elif t == "Limited":
        if spec.get("exempt") is not None:
            errs.append(errors.forbidden("spec.exempt", "must be nil if the type is Limited"))
        limited = spec.get("limited")
        if limited is None:
            errs.append(errors.required("spec.limited", "must not be empty when type is Limited"))
        else:
            errs += _shares(limited, "spec.limited") + _limit_response(limited.get("limitResponse") or {})
    else:
        errs.append(errors.not_supported("spec.type", t, ["Exempt", "Limited"]))
    return errs


def _limit_response(lr: Obj) -> list[FieldError]:
    path = "spec.limited.limitResponse"
    t, q = lr.get("type") or "", lr.get("queuing")
    if t == "Reject":
        return [errors.forbidden(path + ".queuing", "must be nil if limited.limitResponse.type is not Limited")] if q else []
    if t != "Queue":
        return [errors.not_supported(path + ".type", t, ["Queue", "Reject"])]
    if q is None:
        return [errors.required(path + ".queuing", "must not be empty if limited.limitResponse.type is Limited")]
    errs: list[FieldError] = []
    qpath = path + ".queuing"
    for key in ("queueLengthLimit", "queues", "handSize"):
        v = q.get(key)
        if isinstance(v, int) and v <= 0:
            errs.append(errors.invalid(f"{qpath}.{key}", v, "must be positive"))
    hs, queues = q.get("handSize"), q.get("queues")
    if isinstance(hs, int) and isinstance(queues, int) and 0 < queues < hs:
        errs.append(errors.invalid(qpath + ".handSize", hs, f"should not be greater than queues ({queues})"))
    return errs


def _update(create: Any) -> Any:
    def update(new: Obj, old: Obj) -> list[FieldError]:
        errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
        return errs + [e for e in create(new) if not e.field.startswith("metadata.")]
    return update


validate_flow_schema_update = _update(validate_flow_schema)
validate_priority_level_configuration_update = _update(validate_priority_level_configuration)
