"""The PodSecurity decisions: pods (enforce, audit, warn), pod controllers (audit and warn only)
and namespaces (label validation; warnings about existing pods when enforce tightens).

Upstream: Admission.ValidateNamespace, ValidatePod, ValidatePodController, EvaluatePod,
EvaluatePodsInNamespace, exemptNamespaceWarning, isSignificantPodUpdate, prioritizePods
(admission/admission.go); the responses of admission/response.go.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from ....api import errors
from ..interface import Attributes, Operation, status_forbidden
from . import api
from .api import LevelVersion, Policy
from .check import Obj, dict_, list_
from .config import DEFAULT_CONFIGURATION, PodSecurityConfiguration
from .registry import DEFAULT_EVALUATOR, AggregateCheckResult, Evaluator

NamespaceGetter = Callable[[str], Awaitable["Obj | None"]]
PodLister = Callable[[str], Awaitable[list[Obj]]]

NAMESPACE_MAX_PODS_TO_CHECK = 3000
NAMESPACE_POD_CHECK_TIMEOUT = 1.0          # seconds

# Pod subresources that cannot change what the checks look at. Any other (ephemeralcontainers,
# resize, …) is evaluated, so an unknown one fails safe. Upstream: ignoredPodSubresources.
IGNORED_POD_SUBRESOURCES = frozenset({"exec", "attach", "binding", "eviction", "log", "portforward", "proxy",
                                      "status"})


def _template(obj: Obj, *path: str) -> tuple[Obj, Obj] | None:
    t: Any = obj
    for key in path:
        t = dict_(t).get(key)
    return (dict_(t.get("metadata")), dict_(t.get("spec"))) if isinstance(t, dict) else None


# The kinds that carry a pod template, by (group, resource), and where it is.
# Upstream: defaultPodSpecResources, DefaultPodSpecExtractor.ExtractPodSpec.
POD_SPEC_EXTRACTORS: dict[tuple[str, str], Callable[[Obj], "tuple[Obj, Obj] | None"]] = {
    ("", "replicationcontrollers"): lambda o: _template(o, "spec", "template"),
    ("", "podtemplates"): lambda o: _template(o, "template"),
    ("apps", "replicasets"): lambda o: _template(o, "spec", "template"),
    ("apps", "deployments"): lambda o: _template(o, "spec", "template"),
    ("apps", "statefulsets"): lambda o: _template(o, "spec", "template"),
    ("apps", "daemonsets"): lambda o: _template(o, "spec", "template"),
    ("batch", "jobs"): lambda o: _template(o, "spec", "template"),
    ("batch", "cronjobs"): lambda o: _template(o, "spec", "jobTemplate", "spec", "template"),
}


@dataclass
class Response:
    """Upstream: admissionv1.AdmissionResponse (allowed unless error is set). The audit
    annotations' keys carry their prefix (pod-security.kubernetes.io/enforce-policy, …)."""
    error: errors.StatusError | None = None
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)

    @property
    def allowed(self) -> bool:
        return self.error is None


# Shared responses (the common answers, allocated once): never mutate them.
# Upstream: sharedAllowedResponse & co (admission/response.go).
ALLOWED = Response()
ALLOWED_PRIVILEGED = Response(audit_annotations={api.ENFORCED_POLICY_ANNOTATION: str(api.PRIVILEGED_LATEST)})
ALLOWED_BY_NAMESPACE_EXEMPTION = Response(audit_annotations={api.EXEMPTION_REASON_ANNOTATION: "namespace"})
ALLOWED_BY_USER_EXEMPTION = Response(audit_annotations={api.EXEMPTION_REASON_ANNOTATION: "user"})
ALLOWED_BY_RUNTIME_CLASS_EXEMPTION = Response(audit_annotations={api.EXEMPTION_REASON_ANNOTATION: "runtimeClass"})


class Admission:
    def __init__(self, config: PodSecurityConfiguration = DEFAULT_CONFIGURATION,
                 evaluator: Evaluator = DEFAULT_EVALUATOR) -> None:
        self.config = config
        self.evaluator = evaluator
        self.default_policy = config.defaults
        self.default_fully_privileged = config.defaults.fully_privileged()

    def policy_to_evaluate(self, labels: dict[str, str] | None) -> tuple[Policy, list[errors.FieldError]]:
        if not api.has_policy_labels(labels):
            return self.default_policy, []
        return api.policy_to_evaluate(labels, self.default_policy)

    def exempt_namespace(self, ns: str) -> bool:
        return ns in self.config.exempt_namespaces      # never "": not a valid namespace name

    def exempt_user(self, user: str) -> bool:
        return user in self.config.exempt_usernames      # never "": validated

    def exempt_runtime_class(self, runtime_class: Any) -> bool:
        return isinstance(runtime_class, str) and runtime_class in self.config.exempt_runtime_classes

    # --- pods and pod controllers ---------------------------------------------------------

    async def validate_pod(self, a: Attributes, get_namespace: NamespaceGetter) -> Response:
        """Upstream: ValidatePod. The common case (a namespace without pod-security labels,
        privileged by default) reads nothing and allocates nothing."""
        if a.subresource in IGNORED_POD_SUBRESOURCES:
            return ALLOWED
        if self.exempt_namespace(a.namespace):
            return ALLOWED_BY_NAMESPACE_EXEMPTION
        if self.exempt_user(a.user.name):
            return ALLOWED_BY_USER_EXEMPTION
        ns = a.namespace_obj          # as NamespaceLifecycle read it for this request
        if ns is None:
            ns = await get_namespace(a.namespace)
        if ns is None:
            return Response(errors.InternalError(f'failed to lookup namespace "{a.namespace}"'))
        labels = dict_(ns.get("metadata")).get("labels")
        if self.default_fully_privileged and not api.has_policy_labels(labels):
            return ALLOWED_PRIVILEGED
        policy, errs = self.policy_to_evaluate(labels)
        if not errs and policy.fully_privileged():
            return ALLOWED_PRIVILEGED
        pod = a.obj or {}
        if a.operation is Operation.UPDATE and not is_significant_pod_update(pod, a.old_obj or {}):
            return ALLOWED
        return self.evaluate_pod(a, policy, errs, dict_(pod.get("metadata")), dict_(pod.get("spec")), enforce=True)

    async def validate_pod_controller(self, a: Attributes, get_namespace: NamespaceGetter) -> Response:
        """Audit and warn only: the pods the controller creates are enforced one by one.
        Upstream: ValidatePodController."""
        if a.subresource:
            return ALLOWED
        if self.exempt_namespace(a.namespace):
            return ALLOWED_BY_NAMESPACE_EXEMPTION
        if self.exempt_user(a.user.name):
            return ALLOWED_BY_USER_EXEMPTION
        ns = a.namespace_obj
        if ns is None:
            ns = await get_namespace(a.namespace)
        if ns is None:
            return Response(audit_annotations={api.ERROR_ANNOTATION: f'failed to lookup namespace "{a.namespace}"'})
        policy, errs = self.policy_to_evaluate(dict_(ns.get("metadata")).get("labels"))
        if not errs and policy.warn.level == api.PRIVILEGED and policy.audit.level == api.PRIVILEGED:
            return ALLOWED
        extract = POD_SPEC_EXTRACTORS.get((a.group, a.resource))
        template = extract(a.obj or {}) if extract else None
        if template is None:
            return ALLOWED
        return self.evaluate_pod(a, policy, errs, *template, enforce=False)

    def evaluate_pod(self, a: Attributes, policy: Policy, policy_errs: list[errors.FieldError],
                     meta: Obj, spec: Obj, *, enforce: bool) -> Response:
        """Evaluate the modes (enforce only for pods), each level:version once.
        Upstream: EvaluatePod."""
        if self.exempt_runtime_class(spec.get("runtimeClassName")):
            return ALLOWED_BY_RUNTIME_CLASS_EXEMPTION
        response = Response()
        annotations = response.audit_annotations
        if policy_errs:
            annotations[api.ERROR_ANNOTATION] = f"Failed to parse policy: {errors.aggregate(policy_errs)}"
        results: dict[LevelVersion, AggregateCheckResult] = {}

        def result(lv: LevelVersion) -> AggregateCheckResult:
            if lv not in results:
                results[lv] = self.evaluator.evaluate_pod(lv, meta, spec)
            return results[lv]

        if enforce:
            annotations[api.ENFORCED_POLICY_ANNOTATION] = str(policy.enforce)
            r = result(policy.enforce)
            if not r.allowed:
                # Upstream: forbiddenResponse names the request's name only (apierrors.NewForbidden)
                response.error = status_forbidden(a.group, a.resource, a.name,
                                                  f'violates PodSecurity "{policy.enforce}": {r.forbidden_detail()}')
        r = result(policy.audit)
        if not r.allowed:
            annotations[api.AUDIT_VIOLATIONS_ANNOTATION] = \
                f'would violate PodSecurity "{policy.audit}": {r.forbidden_detail()}'
        if response.allowed:          # no warnings on a request refused anyway
            r = result(policy.warn)
            if not r.allowed:
                response.warnings.append(f'would violate PodSecurity "{policy.warn}": {r.forbidden_detail()}')
        return response

    # --- namespaces -----------------------------------------------------------------------

    async def validate_namespace(self, a: Attributes, list_pods: PodLister) -> Response:
        """Valid labels; on an update that tightens enforce, warnings naming the existing pods
        that would be refused now. Upstream: ValidateNamespace."""
        if a.subresource or a.obj is None:
            return ALLOWED
        name = a.namespace or a.name             # upstream's attributes carry the name as namespace
        labels = dict_(dict_(a.obj.get("metadata")).get("labels"))
        new_policy, new_errs = self.policy_to_evaluate(labels)
        if a.operation is Operation.CREATE:
            if new_errs:
                return Response(errors.Invalid(a.group, a.kind, a.name, new_errs))
            return self._exempt_namespace_response(name, new_policy, labels)
        if a.operation is not Operation.UPDATE:
            return ALLOWED
        old_labels = dict_(dict_((a.old_obj or {}).get("metadata")).get("labels"))
        old_policy, old_errs = self.policy_to_evaluate(old_labels)
        if new_errs and (not old_errs or new_errs != old_errs):
            return Response(errors.Invalid(a.group, a.kind, a.name, new_errs))
        enforce, old_enforce = new_policy.enforce, old_policy.enforce
        if (enforce == old_enforce or enforce.level == api.PRIVILEGED
                or (enforce.version == old_enforce.version and api.compare_levels(enforce.level, old_enforce.level) < 1)):
            return ALLOWED
        if self.exempt_namespace(name):
            return self._exempt_namespace_response(name, new_policy, labels)
        return Response(warnings=await self.evaluate_pods_in_namespace(name, enforce, list_pods))

    def _exempt_namespace_response(self, name: str, policy: Policy, labels: dict[str, str]) -> Response:
        if self.exempt_namespace(name) and (warning := self.exempt_namespace_warning(name, policy, labels)):
            return Response(warnings=[warning])
        return ALLOWED

    def exempt_namespace_warning(self, name: str, policy: Policy, labels: dict[str, str]) -> str:
        """A warning when an exempt namespace asks for a policy: it will be ignored.
        Upstream: exemptNamespaceWarning."""
        if policy.fully_privileged() or policy.equivalent(self.default_policy):
            return ""
        parts = []
        for mode, lv in (("enforce", policy.enforce), ("audit", policy.audit), ("warn", policy.warn)):
            if lv.level != api.PRIVILEGED and (api.LABEL_PREFIX + mode in labels
                                               or api.LABEL_PREFIX + mode + "-version" in labels):
                parts.append(f"{mode}={lv}")
        return f'namespace "{name}" is exempt from Pod Security, and the policy ({", ".join(parts)}) will be ignored'

    async def evaluate_pods_in_namespace(self, namespace: str, enforce: LevelVersion, list_pods: PodLister) -> list[str]:
        """One warning per distinct violation, naming the first pod (by name) and how many
        others share it; at most 3,000 pods (one per controller first) and one second.
        Upstream: EvaluatePodsInNamespace, decoratePodWarnings."""
        deadline = time.monotonic() + NAMESPACE_POD_CHECK_TIMEOUT
        try:
            pods = await list_pods(namespace)
        except Exception:
            return ["failed to list pods while checking new PodSecurity enforce level"]
        prioritized = self.prioritize_pods(pods)
        total = len(prioritized)
        prioritized = prioritized[:NAMESPACE_MAX_PODS_TO_CHECK]
        checked = len(prioritized)
        counts: dict[str, tuple[str, int]] = {}        # reasons -> (first pod name, count)
        for i, pod in enumerate(prioritized):
            r = self.evaluator.evaluate_pod(enforce, dict_(pod.get("metadata")), dict_(pod.get("spec")))
            if not r.allowed:
                warning = r.forbidden_reason()
                pod_name = str(dict_(pod.get("metadata")).get("name", ""))
                first, n = counts.get(warning, (pod_name, 0))
                counts[warning] = (min(first, pod_name), n + 1)
            if time.monotonic() > deadline:
                checked = i + 1
                break
        warnings = []
        if checked < total:
            warnings.append(f"new PodSecurity enforce level only checked against the first {checked} of {total} "
                            "existing pods")
        if counts:
            warnings.append(f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
                            f'"{enforce}"')
        return warnings + sorted(_decorate(first, n, w) for w, (first, n) in counts.items())

    def prioritize_pods(self, pods: list[Obj]) -> list[Obj]:
        """Runtime-class-exempt pods out; one pod per controller first, its siblings last.
        Upstream: prioritizePods."""
        first, duplicates = [], []
        seen_controllers: set[str] = set()
        for pod in pods:
            if self.exempt_runtime_class(dict_(pod.get("spec")).get("runtimeClassName")):
                continue
            uid = _controller_uid(pod)
            if uid is None:
                first.append(pod)
            elif uid in seen_controllers:
                duplicates.append(pod)
            else:
                seen_controllers.add(uid)
                first.append(pod)
        return first + duplicates


def _controller_uid(pod: Obj) -> str | None:
    for ref in list_(dict_(pod.get("metadata")).get("ownerReferences")):
        if dict_(ref).get("controller") is True:
            return str(ref.get("uid", ""))
    return None


def _decorate(pod_name: str, count: int, warning: str) -> str:
    if count == 1:
        return f"{pod_name}: {warning}"
    if count == 2:
        return f"{pod_name} (and 1 other pod): {warning}"
    return f"{pod_name} (and {count - 1} other pods): {warning}"


def is_significant_pod_update(pod: Obj, old: Obj) -> bool:
    """Only an image change (or a new ephemeral container) can change a pod's verdict: the other
    mutable fields are not checked. Upstream: isSignificantPodUpdate."""
    spec, old_spec = dict_(pod.get("spec")), dict_(old.get("spec"))
    for key in ("containers", "initContainers"):
        new_cs, old_cs = list_(spec.get(key)), list_(old_spec.get(key))
        if len(new_cs) != len(old_cs):
            return True
        if any(dict_(c).get("image") != dict_(o).get("image") for c, o in zip(new_cs, old_cs)):
            return True
    old_ephemeral = {dict_(c).get("name"): dict_(c) for c in list_(old_spec.get("ephemeralContainers"))}
    for c in map(dict_, list_(spec.get("ephemeralContainers"))):
        o = old_ephemeral.get(c.get("name"))
        if o is None or o.get("image") != c.get("image"):
            return True
    return False
