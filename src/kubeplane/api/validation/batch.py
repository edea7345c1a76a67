"""batch/v1 Job and CronJob validation.

Upstream: pkg/apis/batch/validation/validation.go (ValidateJob, validateGeneratedSelector,
validateJobSpec, validatePodFailurePolicy, validateSuccessPolicy, validatePodReplacementPolicy,
ValidateJobUpdate, ValidateJobStatusUpdate, ValidateCronJobCreate/Update, validateScheduleFormat,
validateTimeZone, ValidateJobTemplateSpec) and the strategies' WarningsOnCreate
(pkg/registry/batch/{job,cronjob}/strategy.go). The pod template is validated with the shared
pod-spec validation (api/validation/core.py).

Left out: the status invariants of validateJobStatus behind its Reject* options (only the counts
are checked), the uncountedTerminatedPods checks, WarningsForJobSpec.
"""
from __future__ import annotations

import re
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import core
from . import meta as m
from .apps import replica_set_name_warnings
from .cron import CronError, load_location, parse_standard
from .names import is_dns1123_label, is_qualified_name, name_is_dns_subdomain

Obj = dict[str, Any]

MAX_PARALLELISM_FOR_INDEXED_JOB = 100_000
MAX_FAILED_INDEXES = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_POD_FAILURE_POLICY_RULES = 20
MAX_ON_EXIT_CODES_VALUES = 255
MAX_ON_POD_CONDITIONS_PATTERNS = 20
MAX_SUCCESS_POLICY_RULES = 20
MAX_SUCCEEDED_INDEXES_LENGTH = 64 * 1024
MAX_MANAGED_BY_LENGTH = 63
LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL = "controller-uid", "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL = "job-name", "batch.kubernetes.io/job-name"

job_warnings = replica_set_name_warnings         # the same DNS-label warning on the name
cron_job_warnings = replica_set_name_warnings


def _too_many(path: str, actual: int, limit: int) -> FieldError:
    return errors.too_many(path, actual, limit)


# --- Job -----------------------------------------------------------------------------------------


def validate_job(job: Obj, prefixed_labels: bool = True) -> list[FieldError]:
    """Upstream: ValidateJob (names: ValidateReplicationControllerName, a DNS subdomain)."""
    meta, spec = job.get("metadata") or {}, job.get("spec") or {}
    errs = m.validate_object_meta(meta, True, name_is_dns_subdomain)
    errs += _validate_generated_selector(job, prefixed_labels)
    errs += validate_job_spec(spec, "spec")
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 0:
        hostname = f"{meta.get('name', '')}-{completions - 1}"
        if is_dns1123_label(hostname):
            errs.append(errors.invalid("metadata.name", meta.get("name", ""),
                                       f"will not able to create pod with invalid DNS label: {hostname}"))
    return errs


def _has_label(labels: Obj, path: str, key: str, expected: str) -> list[FieldError]:
    """Upstream: ValidateHasLabel"""
    if key not in labels:
        return [errors.required(f"{path}.labels[{key}]", f"must be '{expected}'")]
    if labels[key] != expected:
        return [errors.invalid(f"{path}.labels[{key}]", labels, f"must be '{expected}'")]
    return []


def _validate_generated_selector(job: Obj, prefixed_labels: bool = True) -> list[FieldError]:
    """Upstream: validateGeneratedSelector — unless manualSelector, the template carries the
    generated labels (the batch.kubernetes.io ones when RequirePrefixedLabels: on create, and
    on updates of Jobs that have them) and the selector matches them."""
    meta, spec = job.get("metadata") or {}, job.get("spec") or {}
    if spec.get("manualSelector") or spec.get("selector") is None:
        return []
    errs: list[FieldError] = []
    uid, name = meta.get("uid") or "", meta.get("name") or ""
    if not uid:
        errs.append(errors.required("metadata.uid"))
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    path = "spec.template.metadata"
    errs += _has_label(labels, path, LEGACY_CONTROLLER_UID_LABEL, uid)
    errs += _has_label(labels, path, LEGACY_JOB_NAME_LABEL, name)
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
    if prefixed_labels:
        errs += _has_label(labels, path, CONTROLLER_UID_LABEL, uid)
        errs += _has_label(labels, path, JOB_NAME_LABEL, name)
        expected.update({CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name})
    sel = spec["selector"]
    if m.selector_convertible(sel) and not m.selector_matches(sel, expected):
        errs.append(errors.invalid("spec.selector", sel, "`selector` not auto-generated"))
    return errs


def validate_job_spec(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateJobSpec (validateJobSpec + a required selector matching the template)."""
    errs = _validate_job_spec(spec, path)
    sel = spec.get("selector")
    if sel is None:
        errs.append(errors.required(path + ".selector"))
    else:
        errs += m.validate_label_selector(sel, path + ".selector")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if m.selector_convertible(sel) and not m.selector_matches(sel, labels):
        errs.append(errors.invalid(path + ".template.metadata.labels", labels, "`selector` does not match template `labels`"))
    return errs


def _validate_job_spec(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: validateJobSpec"""
    errs: list[FieldError] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                "backoffLimitPerIndex"):
        errs += m.nonnegative(spec.get(key), f"{path}.{key}")
    max_failed, per_index = spec.get("maxFailedIndexes"), spec.get("backoffLimitPerIndex")
    if max_failed is not None:
        errs += m.nonnegative(max_failed, path + ".maxFailedIndexes")
        if per_index is None:
            errs.append(errors.required(path + ".backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    managed_by = spec.get("managedBy")
    if isinstance(managed_by, str):
        errs += _domain_prefixed_path(managed_by, path + ".managedBy")
        if len(managed_by) > MAX_MANAGED_BY_LENGTH:
            errs.append(errors.too_long(path + ".managedBy", MAX_MANAGED_BY_LENGTH))
    errs += _validate_completion_mode(spec, path)
    if spec.get("podFailurePolicy") is not None:
        errs += _validate_pod_failure_policy(spec, path + ".podFailurePolicy")
    success = spec.get("successPolicy")
    if success is not None:
        if spec.get("completionMode") != "Indexed":
            errs.append(errors.invalid(path + ".successPolicy", success, "requires indexed completion mode"))
        else:
            errs += _validate_success_policy(spec, path + ".successPolicy")
    errs += _validate_pod_replacement_policy(spec, path + ".podReplacementPolicy")
    template = spec.get("template") or {}
    errs += core.validate_pod_template_spec(template, path + ".template")
    restart = (template.get("spec") or {}).get("restartPolicy") or ""
    rp_path = path + ".template.spec.restartPolicy"
    if restart in ("Always", ""):
        errs.append(errors.required(rp_path, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(errors.not_supported(rp_path, restart, ["OnFailure", "Never"]))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        errs.append(errors.invalid(rp_path, restart, 'only "Never" is supported when podFailurePolicy is specified'))
    return errs


def _domain_prefixed_path(value: str, path: str) -> list[FieldError]:
    """Upstream: IsDomainPrefixedPath (a DNS subdomain, then a non-empty path)."""
    host, sep, rest = value.partition("/")
    if not sep or not rest:
        return [errors.invalid(path, value, "must be a domain-prefixed path (such as \"acme.io/foo\")")]
    from .names import is_dns1123_subdomain
    errs = [errors.invalid(path, host, msg) for msg in is_dns1123_subdomain(host)]
    if not re.fullmatch(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+", rest):
        errs.append(errors.invalid(path, value, "must be a valid path"))
    return errs


def _high_completions(parallelism: Any, max_failed: Any, path: str) -> list[FieldError]:
    """Indexed Jobs above completionsSoftLimit with backoffLimitPerIndex."""
    errs: list[FieldError] = []
    suffix = f"when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
    if max_failed is None:
        errs.append(errors.required(path + ".maxFailedIndexes",
                                    f"must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"))
    if isinstance(parallelism, int) and parallelism > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS:
        errs.append(errors.invalid(path + ".parallelism", parallelism,
                                   f"must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} {suffix}"))
    if isinstance(max_failed, int) and max_failed > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS:
        errs.append(errors.invalid(path + ".maxFailedIndexes", max_failed,
                                   f"must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} {suffix}"))
    return errs


def _validate_completion_mode(spec: Obj, path: str) -> list[FieldError]:
    mode = spec.get("completionMode")
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    per_index, max_failed = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    errs: list[FieldError] = []
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(errors.not_supported(path + ".completionMode", mode, ["NonIndexed", "Indexed"]))
        if mode == "Indexed":
            if completions is None:
                errs.append(errors.required(path + ".completions", "when completion mode is Indexed"))
            if isinstance(parallelism, int) and parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
                errs.append(errors.invalid(path + ".parallelism", parallelism,
                                           f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} "
                                           "when completion mode is Indexed"))
            if isinstance(completions, int) and isinstance(max_failed, int) and max_failed > completions:
                errs.append(errors.invalid(path + ".maxFailedIndexes", max_failed, "must be less than or equal to completions"))
            if isinstance(max_failed, int) and max_failed > MAX_FAILED_INDEXES:
                errs.append(errors.invalid(path + ".maxFailedIndexes", max_failed,
                                           f"must be less than or equal to {MAX_FAILED_INDEXES}"))
            if isinstance(completions, int) and completions > COMPLETIONS_SOFT_LIMIT and per_index is not None:
                errs += _high_completions(parallelism, max_failed, path)
    if mode in (None, "NonIndexed"):
        if per_index is not None:
            errs.append(errors.invalid(path + ".backoffLimitPerIndex", per_index, "requires indexed completion mode"))
        if max_failed is not None:
            errs.append(errors.invalid(path + ".maxFailedIndexes", max_failed, "requires indexed completion mode"))
    return errs


_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]


def _valid_values(values: list[str]) -> str:
    """fmt.Sprintf("valid values: %q", values): Go quotes each string of the slice."""
    return "valid values: [" + " ".join(f'"{v}"' for v in values) + "]"


def _validate_pod_failure_policy(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: validatePodFailurePolicy / validatePodFailurePolicyRule"""
    rules = (spec.get("podFailurePolicy") or {}).get("rules") or []
    errs: list[FieldError] = []
    if len(rules) > MAX_POD_FAILURE_POLICY_RULES:
        errs.append(_too_many(path + ".rules", len(rules), MAX_POD_FAILURE_POLICY_RULES))
    tspec = (spec.get("template") or {}).get("spec") or {}
    names = {c.get("name") for key in ("containers", "initContainers") for c in tspec.get(key) or []}
    for i, rule in enumerate(rules):
        rpath, action = f"{path}.rules[{i}]", rule.get("action") or ""
        if not action:
            errs.append(errors.required(rpath + ".action", _valid_values(_ACTIONS)))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errs.append(errors.invalid(rpath + ".action", action, "requires the backoffLimitPerIndex to be set"))
        elif action not in _ACTIONS:
            errs.append(errors.not_supported(rpath + ".action", action, _ACTIONS))
        on_exit, on_conditions = rule.get("onExitCodes"), rule.get("onPodConditions") or []
        if on_exit is not None:
            errs += _validate_on_exit_codes(on_exit, rpath + ".onExitCodes", names)
        if on_conditions:
            errs += _validate_on_pod_conditions(on_conditions, rpath + ".onPodConditions")
        if on_exit is not None and on_conditions:
            errs.append(errors.invalid(rpath, errors._OMIT, "specifying both OnExitCodes and OnPodConditions is not supported"))
        if on_exit is None and not on_conditions:
            errs.append(errors.invalid(rpath, errors._OMIT, "specifying one of OnExitCodes and OnPodConditions is required"))
    return errs


def _validate_on_exit_codes(req: Obj, path: str, names: set[Any]) -> list[FieldError]:
    """Upstream: validatePodFailurePolicyRuleOnExitCodes"""
    errs: list[FieldError] = []
    op = req.get("operator") or ""
    if not op:
        errs.append(errors.required(path + ".operator", _valid_values(["In", "NotIn"])))
    elif op not in ("In", "NotIn"):
        errs.append(errors.not_supported(path + ".operator", op, ["In", "NotIn"]))
    container = req.get("containerName")
    if container is not None and container not in names:
        errs.append(errors.invalid(path + ".containerName", container,
                                   "must be one of the container or initContainer names in the pod template"))
    values = req.get("values") or []
    if not values:
        errs.append(errors.invalid(path + ".values", values, "at least one value is required"))
    elif len(values) > MAX_ON_EXIT_CODES_VALUES:
        errs.append(_too_many(path + ".values", len(values), MAX_ON_EXIT_CODES_VALUES))
    seen: set[int] = set()
    for j, v in enumerate(values):
        if op == "In" and v == 0:
            errs.append(errors.invalid(f"{path}.values[{j}]", v, "must not be 0 for the In operator"))
        if v in seen:
            errs.append(errors.duplicate(f"{path}.values[{j}]", v))
        seen.add(v)
    if any(a > b for a, b in zip(values, values[1:])):
        errs.append(errors.invalid(path + ".values", values, "must be ordered"))
    return errs


def _validate_on_pod_conditions(patterns: list[Obj], path: str) -> list[FieldError]:
    """Upstream: validatePodFailurePolicyRuleOnPodConditions"""
    errs: list[FieldError] = []
    if len(patterns) > MAX_ON_POD_CONDITIONS_PATTERNS:
        errs.append(_too_many(path, len(patterns), MAX_ON_POD_CONDITIONS_PATTERNS))
    for j, pattern in enumerate(patterns):
        type_ = pattern.get("type", "")
        errs += [errors.invalid(f"{path}[{j}].type", type_, msg) for msg in is_qualified_name(type_)]
        status = pattern.get("status") or ""
        if not status:
            errs.append(errors.required(f"{path}[{j}].status", _valid_values(["False", "True", "Unknown"])))
        elif status not in ("False", "True", "Unknown"):
            errs.append(errors.not_supported(f"{path}[{j}].status", status, ["False", "True", "Unknown"]))
    return errs


def _parse_indexes(text: str, completions: int) -> tuple[int, str]:
    """Upstream: parseIndexesFromString — the number of indexes in "1,3-5", or an error text."""
    total, previous = 0, -1
    for part in text.split(","):
        bounds = part.split("-")
        if len(bounds) > 2:
            return total, f"the fragment {part!r} violates the requirement that an index interval can have at most two parts separated by '-'"
        try:
            x = int(bounds[0])
            y = int(bounds[-1])
        except ValueError:
            return total, f"cannot convert string to integer for index: {bounds[0]!r}"
        if x >= completions or y >= completions:
            return total, f"too large index: {max(x, y)}"
        if x <= previous or y < x:
            return total, f"non-increasing order, previous: {previous}, current: {x}"
        total, previous = total + y - x + 1, y
    return total, ""


def _validate_success_policy(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: validateSuccessPolicy / validateSuccessPolicyRule"""
    rules = (spec.get("successPolicy") or {}).get("rules") or []
    completions = spec.get("completions") or 0
    errs: list[FieldError] = []
    if not rules:
        errs.append(errors.required(path + ".rules", "at least one rules must be specified when the successPolicy is specified"))
    if len(rules) > MAX_SUCCESS_POLICY_RULES:
        errs.append(_too_many(path + ".rules", len(rules), MAX_SUCCESS_POLICY_RULES))
    for i, rule in enumerate(rules):
        rpath = f"{path}.rules[{i}]"
        indexes, count = rule.get("succeededIndexes"), rule.get("succeededCount")
        if indexes is None and count is None:
            errs.append(errors.required(rpath, "at least one of succeededCount or succeededIndexes must be specified"))
        total = 0
        if isinstance(indexes, str):
            total, err = _parse_indexes(indexes, completions)
            if err:
                errs.append(errors.invalid(rpath + ".succeededIndexes", indexes, f"error parsing succeededIndexes: {err}"))
            if len(indexes) > MAX_SUCCEEDED_INDEXES_LENGTH:
                errs.append(errors.too_long(rpath + ".succeededIndexes", MAX_SUCCEEDED_INDEXES_LENGTH))
        if isinstance(count, int):
            errs += m.nonnegative(count, rpath + ".succeededCount")
            if count > completions:
                errs.append(errors.invalid(rpath + ".succeededCount", count,
                                           f"must be less than or equal to {completions} (the number of specified completions)"))
            if indexes is not None and count > total:
                errs.append(errors.invalid(rpath + ".succeededCount", count, f"must be less than or equal to {total} "
                                           "(the number of indexes in the specified succeededIndexes field)"))
    return errs


def _validate_pod_replacement_policy(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: validatePodReplacementPolicy"""
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return []
    if spec.get("podFailurePolicy") is not None:
        return [] if policy == "Failed" else [errors.not_supported(path, policy, ["Failed"])]
    if policy not in ("Failed", "TerminatingOrFailed"):
        return [errors.not_supported(path, policy, ["Failed", "TerminatingOrFailed"])]
    return []


def validate_job_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: the job strategy's ValidateUpdate = ValidateJob + ValidateJobUpdate."""
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    # validationOptionsForJob: the prefixed labels are required of Jobs created with them.
    old_labels = ((old_spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    errs = validate_job(new, CONTROLLER_UID_LABEL in old_labels)
    errs += m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += validate_job_spec(spec, "spec")
    errs += _validate_completions_update(spec, old_spec)
    errs += m.immutable(spec.get("selector"), old_spec.get("selector"), "spec.selector")
    errs += _validate_pod_template_update(new, old)
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        errs += m.immutable(spec.get(key), old_spec.get(key), f"spec.{key}")
    return _dedupe(errs)


def _dedupe(errs: list[FieldError]) -> list[FieldError]:
    """ValidateJob and ValidateJobSpecUpdate both validate the spec; upstream's ToAggregate drops
    the duplicates (an aggregate of the same message is one message)."""
    out, seen = [], set()
    for e in errs:
        if str(e) not in seen:
            seen.add(str(e))
            out.append(e)
    return out


def _validate_completions_update(spec: Obj, old_spec: Obj) -> list[FieldError]:
    """Upstream: validateCompletions (elastic Indexed Jobs: completions changes with parallelism)."""
    if spec.get("completionMode") != "Indexed":
        return m.immutable(spec.get("completions"), old_spec.get("completions"), "spec.completions")
    completions = spec.get("completions")
    if completions == old_spec.get("completions") or completions is None:
        return []
    if completions != spec.get("parallelism"):
        return [errors.invalid("spec.completions", completions, "can only be modified in tandem with spec.parallelism")]
    return []


def _validate_pod_template_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: validatePodTemplateUpdate — the template is immutable, but a suspended Job that
    never started may change its scheduling directives (node affinity, nodeSelector,
    tolerations, scheduling gates) and the template's labels and annotations."""
    template = (new.get("spec") or {}).get("template") or {}
    old_template = (old.get("spec") or {}).get("template") or {}
    if (old.get("spec") or {}).get("suspend") and not (old.get("status") or {}).get("startTime"):
        tspec, ospec = template.get("spec") or {}, dict(old_template.get("spec") or {})
        for key in ("nodeSelector", "tolerations", "schedulingGates"):
            if key in tspec:
                ospec[key] = tspec[key]
            else:
                ospec.pop(key, None)
        affinity, old_affinity = tspec.get("affinity"), dict(ospec.get("affinity") or {})
        old_affinity.pop("nodeAffinity", None)
        if affinity and affinity.get("nodeAffinity") is not None:
            old_affinity["nodeAffinity"] = affinity["nodeAffinity"]
        ospec["affinity"] = old_affinity or (None if affinity is None else {})
        ometa = {**(old_template.get("metadata") or {})}
        for key in ("labels", "annotations"):
            ometa[key] = (template.get("metadata") or {}).get(key)
        old_template = {**old_template, "metadata": ometa, "spec": ospec}
    return m.immutable(template, old_template, "spec.template")


def validate_job_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateJobUpdateStatus / ValidateJobStatus (the counts)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    for key in ("active", "succeeded", "failed", "ready", "terminating"):
        errs += m.nonnegative(status.get(key), f"status.{key}")
    return errs


# --- CronJob -------------------------------------------------------------------------------------

# https://data.iana.org/time-zones/theory.html#naming, with 0-9 and + for legacy names.
_TIME_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def validate_cron_job(cj: Obj) -> list[FieldError]:
    """Upstream: ValidateCronJobCreate (names end up in Job names with an 11-character suffix)."""
    meta = cj.get("metadata") or {}
    errs = m.validate_object_meta(meta, True, name_is_dns_subdomain)
    errs += _validate_cron_job_spec(cj.get("spec") or {}, None, "spec")
    if len(meta.get("name") or "") > 63 - 11:
        errs.append(errors.invalid("metadata.name", meta["name"], "must be no more than 52 characters"))
    return errs


def validate_cron_job_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateCronJobUpdate (no name-length check: old long names stay updatable)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + _validate_cron_job_spec(new.get("spec") or {}, old.get("spec") or {}, "spec")


def validate_cron_job_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: the cronjob status strategy validates the metadata update only."""
    return m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def _validate_cron_job_spec(spec: Obj, old_spec: Obj | None, path: str) -> list[FieldError]:
    """Upstream: validateCronJobSpec"""
    errs: list[FieldError] = []
    schedule = spec.get("schedule") or ""
    if not schedule:
        errs.append(errors.required(path + ".schedule"))
    else:
        allow_tz = old_spec is not None and "TZ" in (old_spec.get("schedule") or "")
        errs += _validate_schedule_format(schedule, allow_tz, spec.get("timeZone"), path + ".schedule")
    errs += m.nonnegative(spec.get("startingDeadlineSeconds"), path + ".startingDeadlineSeconds")
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        errs += _validate_time_zone(spec.get("timeZone"), path + ".timeZone")
    policy = spec.get("concurrencyPolicy") or ""
    if not policy:
        errs.append(errors.required(path + ".concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        errs.append(errors.not_supported(path + ".concurrencyPolicy", policy, ["Allow", "Forbid", "Replace"]))
    errs += validate_job_template_spec(spec.get("jobTemplate") or {}, path + ".jobTemplate")
    errs += m.nonnegative(spec.get("successfulJobsHistoryLimit"), path + ".successfulJobsHistoryLimit")
    return errs + m.nonnegative(spec.get("failedJobsHistoryLimit"), path + ".failedJobsHistoryLimit")


def _validate_schedule_format(schedule: str, allow_tz: bool, time_zone: Any, path: str) -> list[FieldError]:
    """Upstream: validateScheduleFormat (cron.ParseStandard's error text as the detail)."""
    errs: list[FieldError] = []
    try:
        parse_standard(schedule)
    except CronError as e:
        errs.append(errors.invalid(path, schedule, str(e)))
    if allow_tz and "TZ" in schedule and time_zone is not None:
        errs.append(errors.invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    elif not allow_tz and "TZ" in schedule:
        errs.append(errors.invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    return errs


def _validate_time_zone(tz: Any, path: str) -> list[FieldError]:
    """Upstream: validateTimeZone"""
    if tz is None:
        return []
    if tz == "":
        return [errors.invalid(path, tz, "timeZone must be nil or non-empty string")]
    for part in tz.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.fullmatch(part):
            return [errors.invalid(path, tz, f"unknown time zone {tz}")]
    errs: list[FieldError] = []
    if tz.lower() == "local":
        errs.append(errors.invalid(path, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
    try:
        load_location(tz)
    except CronError as e:
        errs.append(errors.invalid(path, tz, str(e)))
    return errs


def validate_job_template_spec(template: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateJobTemplateSpec (the selector is always generated)."""
    spec = template.get("spec") or {}
    errs = _validate_job_spec(spec, path + ".spec")
    if spec.get("selector") is not None:
        errs.append(errors.invalid(path + ".spec.selector", spec["selector"], "`selector` will be auto-generated"))
    if spec.get("manualSelector"):
        errs.append(errors.not_supported(path + ".spec.manualSelector", spec["manualSelector"], ["nil", "false"]))
    return errs
