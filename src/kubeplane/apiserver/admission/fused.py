"""A pod create through the default plugins, in one call per phase (issue 12: the chain's share).

The chain asks each plugin in turn (Chain.admit / Chain.validate): on a pod create with the
default plugins that is six admit_now and four validate_now calls, each re-testing the request
(operation, resource, group, subresource, the object's kind) and looking its index up through
a helper (get_now, has_now) — ~57k instructions per create in all, most of them calls and
tests that answer the same every time. PodCreate runs the same plugins' common case written out
one after the other, in chain order, reading the same indexes the same way:

    NamespaceLifecycle   the namespace is listed (its index current) and not terminating
    LimitRanger          no LimitRange in the namespace
    ServiceAccount       the account is listed; no mirror pod; the token volume mounted as
                         mount_service_account_token_volume mounts it (no volume of the pod's
                         own named kube-api-access-*); the account has no annotations and no
                         imagePullSecrets
    NodeRestriction      the user is not a node
    Priority             no priorityClassName, no default class (its index current), neither
                         priority nor preemptionPolicy set
    DefaultTolerationSeconds   (every case: its own code)
  and, validating:
    LimitRanger, ServiceAccount (the account admit found, its index unchanged since),
    PodSecurity (the namespace it last found without pod-security labels), ResourceQuota (no
    quota in the namespace).

The plugins' settings must be their defaults (ServiceAccount: mount_service_account_token,
not limit_secret_references), asked on every pod. What was last found to take the common case
(the namespace not terminating, the account without imagePullSecrets or annotations, the user
not a node) is known again by identity: stored objects are never changed in place.

A step whose case is not the common one changes nothing and hands over: the phase returns how
many plugins it has run, and the chain asks the remaining plugins itself (admit_now, else their
coroutine), from that one on. So every request gets exactly what the plugins' own code gives it —
the same mutations, refusals and messages (tests/apiserver/admission/test_fused.py compares the
two over many pod shapes). Only a route of exactly these plugin classes is fused (Chain._route):
a webhook or policy configured, a plugin disabled or one a test adds, and the chain asks each
plugin as before.

Upstream: chainAdmissionHandler (staging/src/k8s.io/apiserver/pkg/admission/chain.go) runs the
same plugins one by one; the result is the same, the cost is Python's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .interface import Attributes, Plugin

if TYPE_CHECKING:
    from .plugins.limit_ranger import LimitRanger
    from .plugins.namespace_lifecycle import NamespaceLifecycle
    from .plugins.pod_security import PodSecurity
    from .plugins.priority import Priority
    from .plugins.resource_quota import ResourceQuota
    from .plugins.service_account import ServiceAccount

Obj = dict[str, Any]
_NOTHING = object()          # what no look-up answers (PodCreate's "last found" before the first)


def pod_create(admitters: list[Plugin], validators: list[Plugin]) -> PodCreate | None:
    """The fused phases for a pod create's route, None unless the route is exactly the default
    plugins (their own classes, not subclasses: a subclass may decide differently)."""
    from .plugins.default_toleration_seconds import DefaultTolerationSeconds
    from .plugins.limit_ranger import LimitRanger
    from .plugins.namespace_lifecycle import NamespaceLifecycle
    from .plugins.noderestriction import NodeRestriction
    from .plugins.pod_security import PodSecurity
    from .plugins.priority import Priority
    from .plugins.resource_quota import ResourceQuota
    from .plugins.service_account import ServiceAccount
    if ([type(p) for p in admitters] != [NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction,
                                         Priority, DefaultTolerationSeconds]
            or [type(p) for p in validators] != [LimitRanger, ServiceAccount, PodSecurity, ResourceQuota]
            or admitters[1] is not validators[0] or admitters[2] is not validators[1]):
        return None
    return PodCreate(admitters[0], admitters[1], admitters[2], admitters[4],  # type: ignore[arg-type]
                     validators[2], validators[3])  # type: ignore[arg-type]


class PodCreate:
    """The two phases of a pod create (CREATE of core pods, no subresource) through the default
    plugins (see the module docstring). admit(a) / validate(a): how many of the route's
    admitters / validators were run; the chain runs the rest."""

    ADMITTERS = 6
    VALIDATORS = 4

    def __init__(self, lifecycle: NamespaceLifecycle, limits: LimitRanger, accounts: ServiceAccount,
                 priority: Priority, security: PodSecurity, quota: ResourceQuota) -> None:
        from .plugins import default_toleration_seconds as dts
        from .plugins import namespace_lifecycle as nl
        from .plugins import pod_security as ps
        from .plugins import service_account as sa
        self.lifecycle, self.limits, self.accounts = lifecycle, limits, accounts
        self.priority, self.security, self.quota = priority, security, quota
        self._namespace_key = nl._NAMESPACE_KEY
        self._sa_prefix = sa._SA_PREFIX
        self._volume_prefix = sa._VOLUME_PREFIX
        self._mirror = sa.MIRROR_POD_ANNOTATION_KEY
        self._token_source = sa.TOKEN_VOLUME_SOURCE
        self._token_path = sa.DEFAULT_API_TOKEN_MOUNT_PATH
        self._mount = sa._mount
        self._not_ready, self._unreachable = dts.NOT_READY_TOLERATION, dts.UNREACHABLE_TOLERATION
        self._default_tolerations = dts.default_toleration_seconds
        self._enforced = ps.ENFORCED_POLICY_ANNOTATION
        self._privileged = ps.PRIVILEGED_LATEST
        # The last objects found to take the common case (identity: stored objects are never
        # changed in place): the namespace not terminating, the account without imagePullSecrets
        # or annotations (the plugin's defaults), the user not a node.
        self._active: object = _NOTHING
        self._plain_account: object = _NOTHING
        self._account_automount: Any = None      # its automountServiceAccountToken
        self._default_keys: dict[str, str] = {}  # namespace -> its default account's key
        self._not_node: object = _NOTHING

    def admit(self, a: Attributes) -> int:
        """The mutating phase's common case; returns the number of plugins done (6: all)."""
        ns = a.namespace
        pod = a.obj
        if not ns or a.kind != "Pod" or type(pod) is not dict:
            return 0
        # NamespaceLifecycle.admit_now: the namespace from its index, while nothing was written
        # under its prefix since the index last looked (index.get_now without a relist), and not
        # terminating (known of the object it last found so: stored objects are never changed
        # in place, a new status is a new object).
        index = self.lifecycle.index
        waiter = index._waiter
        if waiter is None or waiter.done():
            return 0
        objs = index._by_ns.get("")
        namespace = objs.get(self._namespace_key + ns) if objs else None
        if namespace is not self._active:
            if type(namespace) is not dict or (namespace.get("status") or {}).get("phase") == "Terminating":
                return 0
            self._active = namespace
        a.namespace_obj = namespace
        # LimitRanger.admit_now: no LimitRange in the namespace (index.has_now is False).
        index = self.limits.index
        waiter = index._waiter
        if waiter is None or waiter.done() or ns in index._by_ns:
            return 1
        # ServiceAccount.admit_now and _admit: the account from its index.
        spec = pod.get("spec")
        if type(spec) is not dict or pod.get("kind", "Pod") != "Pod":
            return 2
        meta = pod.get("metadata")
        if meta and (annotations := meta.get("annotations")) and self._mirror in annotations:
            return 2
        plain = _SPEC_FIELDS.isdisjoint(spec)            # a pod stating none of what the plugins read
        accounts = self.accounts
        index = accounts.index         # type: ignore[assignment]
        if index is None:
            return 2
        waiter = index._waiter
        if waiter is None or waiter.done():
            return 2
        objs = index._by_ns.get(ns)
        if plain:
            name = "default"
            key = self._default_keys.get(ns) or self._default_key(ns)
        else:
            name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
            key = f"{self._sa_prefix}{ns}/{name}"
        sa = objs.get(key) if objs else None
        if sa is not self._plain_account:
            # an account with nothing but its automount choice for the pod: no imagePullSecrets
            # to copy, no annotations (mountable secrets), the plugin's defaults
            if type(sa) is not dict or sa.get("imagePullSecrets") or (sa.get("metadata") or {}).get("annotations"):
                return 2
            self._plain_account, self._account_automount = sa, sa.get("automountServiceAccountToken")
        if accounts.limit_secret_references or not accounts.mount_service_account_token:
            return 2                    # the plugin's settings (test seams): its own code
        automount = None if plain else spec.get("automountServiceAccountToken")
        if automount is None:
            automount = self._account_automount
        volumes = None if plain else spec.get("volumes")
        if volumes:
            for v in volumes:           # a kube-api-access-* volume of the pod's own: its code
                v_name = v.get("name")
                if type(v_name) is str and v_name.startswith(self._volume_prefix):
                    return 2
        a.service_account = (name, sa, index.generation)      # type: ignore[assignment]
        spec["serviceAccountName"] = spec["serviceAccount"] = name
        if automount is None or automount:
            # mount_service_account_token_volume, the pod having no token volume of its own
            volume_name = accounts.generate_name(self._volume_prefix)
            needs_volume = False if plain else (bool(init := spec.get("initContainers"))
                                                and self._mount(init, volume_name))
            containers = spec.get("containers")
            if type(containers) is list and len(containers) == 1 and not (c := containers[0]).get("volumeMounts"):
                c["volumeMounts"] = [{"name": volume_name, "readOnly": True, "mountPath": self._token_path}]
                needs_volume = True
            else:
                needs_volume = self._mount(containers, volume_name) or needs_volume
            if needs_volume:
                if volumes:
                    volumes.append({"name": volume_name, "projected": self._token_source})
                    spec["volumes"] = volumes
                else:
                    spec["volumes"] = [{"name": volume_name, "projected": self._token_source}]
        # NodeRestriction.admit_now: anyone's but a node's request is not its.
        user = a.user
        if user is not self._not_node:
            if user.name.startswith("system:node:"):
                return 3
            self._not_node = user
        # Priority.admit_now: no class named, no default class, nothing the pod states.
        if not plain and ("priorityClassName" in spec or "priority" in spec or "preemptionPolicy" in spec):
            return 4
        priority = self.priority
        waiter = priority.index._waiter
        if waiter is None or waiter.done() or priority._default[1] is not None:
            return 4
        spec["priority"] = 0
        spec["preemptionPolicy"] = "PreemptLowerPriority"
        # DefaultTolerationSeconds.admit_now
        if plain or not spec.get("tolerations"):
            spec["tolerations"] = [self._not_ready, self._unreachable]
        else:
            self._default_tolerations(pod)
        return 6

    def _default_key(self, ns: str) -> str:
        """The storage key of namespace ns's default service account (kept for the next pod)."""
        if len(self._default_keys) >= 1024:
            self._default_keys.clear()
        key = self._default_keys[ns] = f"{self._sa_prefix}{ns}/default"
        return key

    def validate(self, a: Attributes) -> int:
        """The validating phase's common case; returns the number of plugins done (4: all)."""
        ns = a.namespace
        pod = a.obj
        if not ns or a.kind != "Pod" or type(pod) is not dict:
            return 0
        # LimitRanger.validate_now: no LimitRange in the namespace.
        index = self.limits.index
        waiter = index._waiter
        if waiter is None or waiter.done() or ns in index._by_ns:
            return 0
        # ServiceAccount.validate_now: the account admit found, while its index did not move,
        # without annotations (no mountable-secrets enforcement); not a mirror pod.
        found = a.service_account
        spec = pod.get("spec")
        if found is None or type(spec) is not dict or pod.get("kind", "Pod") != "Pod":
            return 1
        meta = pod.get("metadata")
        if meta and (annotations := meta.get("annotations")) and self._mirror in annotations:
            return 1
        accounts = self.accounts
        index = accounts.index         # type: ignore[assignment]
        if (found[1] is not self._plain_account or accounts.limit_secret_references or index is None
                or found[2] != index.generation
                or (waiter := index._waiter) is None or waiter.done()
                or found[0] != (spec.get("serviceAccountName") or "")):
            return 1
        # PodSecurity.validate_now: the namespace it last found without pod-security labels.
        security = self.security
        namespace = a.namespace_obj
        if namespace is None or namespace is not security._last_unlabelled or not security._fast_path:
            return 2
        a.audit_annotations[self._enforced] = self._privileged
        # ResourceQuota.validate_now: no quota in the namespace.
        index = self.quota.index
        waiter = index._waiter
        if waiter is None or waiter.done() or ns in index._by_ns:
            return 3
        return 4


# What a pod may state that one of the plugins reads (ServiceAccount: the account, its
# automount choice, volumes, init containers; Priority: its class, priority, policy;
# DefaultTolerationSeconds: tolerations). A pod stating none of them takes the shortest way.
_SPEC_FIELDS = frozenset({"serviceAccountName", "serviceAccount", "automountServiceAccountToken", "volumes",
                          "initContainers", "priorityClassName", "priority", "preemptionPolicy", "tolerations"})
