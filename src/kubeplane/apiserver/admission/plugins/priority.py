"""Priority: a pod's priority and preemptionPolicy come from its PriorityClass, never from the
pod itself.

On pod create, priorityClassName names the class (403 `no PriorityClass with name X was
found` if none); an empty name takes the class marked globalDefault (the lowest value if
several are), else priority 0 and PreemptLowerPriority. A pod that states a priority or a
preemptionPolicy other than its class's is refused. On pod update, the values set at create are
kept when the new object leaves them out. A PriorityClass marked globalDefault is refused while
another one is.

PriorityClasses are read from storage (/registry/priorityclasses/<name>); the two system
classes are built in (upstream creates them at start-up) until stored ones replace them. Cost on
the pod create path: one get for a named class; for an unnamed one, a scan of the classes in a
watch-fed index of the prefix (_index.py), nothing when there are none.

Upstream: plugin/pkg/admission/priority/admission.go (admitPod, validatePriorityClass,
getDefaultPriorityClass, getDefaultPriority); pkg/apis/scheduling (SystemPriorityClasses,
DefaultPriorityWhenNoDefaultClassExists); SetDefaults_PriorityClass.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..chain import register
from ....api.validation import scheduling
from ..interface import CREATE, UPDATE, Attributes, Operation, Plugin, forbidden
from ._index import PrefixIndex

if TYPE_CHECKING:
    from ...server import APIServer

Obj = dict[str, Any]

PREFIX = "/registry/priorityclasses/"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS = 0


def _system_class(name: str, value: int, description: str) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "globalDefault": False, "description": description,
            "preemptionPolicy": PREEMPT_LOWER_PRIORITY}


# Upstream: systemPriorityClasses (pkg/apis/scheduling/helpers.go); the server also stores them
# at start, and a stored class wins.
SYSTEM_PRIORITY_CLASSES = {c["name"]: _system_class(c["name"], c["value"], c["description"])
                           for c in scheduling.SYSTEM_PRIORITY_CLASSES}


@register
class Priority(Plugin):
    NAME = "Priority"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE})
    RESOURCES = frozenset({("", "pods"), ("scheduling.k8s.io", "priorityclasses")})
    SUBRESOURCES = frozenset({""})
    MUTATING = True
    VALIDATING = True

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self.index = PrefixIndex(api.storage, PREFIX)
        self._default: tuple[int, Obj | None] = (-1, None)    # (index generation, default class)

    def admits_on(self, group: str, resource: str, subresource: str) -> bool:
        return group == "" and resource == "pods" and not subresource

    def validates_on(self, group: str, resource: str, subresource: str) -> bool:
        return group == "scheduling.k8s.io" and resource == "priorityclasses" and not subresource

    def admit_now(self, a: Attributes) -> bool:
        """admit, when the pod names no class and the default class is known already."""
        pod = a.obj
        if a.subresource or a.resource != "pods" or a.group or not isinstance(pod, dict):
            return True
        spec = pod.setdefault("spec", {})
        if a.operation is UPDATE:
            _keep_priority(spec, a.old_obj)
            return True
        if spec.get("priorityClassName"):
            return False
        index, (generation, default) = self.index, self._default
        waiter = index._waiter       # index.poll()'s own first test, without its call
        if (waiter is None or waiter.done()) and index.poll() != generation:
            return False
        if default is None and spec.get("priority") is None and spec.get("preemptionPolicy") is None:
            # _admit_with_default's answer without a default class, written out (every pod create)
            spec.pop("priorityClassName", None)
            spec["priority"] = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS
            spec["preemptionPolicy"] = PREEMPT_LOWER_PRIORITY
            return True
        self._admit_with_default(a, spec, default)
        return True

    async def admit(self, a: Attributes) -> None:
        """Upstream: Plugin.Admit (pods only, no subresource)"""
        if a.subresource or not a.targets("", "pods") or not isinstance(a.obj, dict):
            return
        spec = a.obj.setdefault("spec", {})
        if a.operation is UPDATE:
            _keep_priority(spec, a.old_obj)
            return
        await self.admit_pod_create(a, spec)

    async def admit_pod_create(self, a: Attributes, spec: Obj) -> None:
        """Upstream: admitPod (create)"""
        name = spec.get("priorityClassName") or ""
        if not name:
            return self._admit_with_default(a, spec, await self.default_priority_class())
        pc = await self.priority_class(name)
        if pc is None:
            raise forbidden(a, f"no PriorityClass with name {name} was found")
        self._set_priority(a, spec, pc.get("value", 0), pc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)

    def _admit_with_default(self, a: Attributes, spec: Obj, pc: Obj | None) -> None:
        """A pod naming no class gets the default class's priority, or 0 without one."""
        if pc is None:
            spec.pop("priorityClassName", None)
            return self._set_priority(a, spec, DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, PREEMPT_LOWER_PRIORITY)
        spec["priorityClassName"] = pc["metadata"]["name"]
        self._set_priority(a, spec, pc.get("value", 0), pc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)

    @staticmethod
    def _set_priority(a: Attributes, spec: Obj, priority: int, policy: str | None) -> None:
        if spec.get("priority") is not None and spec["priority"] != priority:
            raise forbidden(a, f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; "
                               f"priority admission controller computed {priority} from the given PriorityClass name")
        spec["priority"] = priority
        if policy is not None:
            if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
                raise forbidden(a, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be "
                                   f"provided in pod spec; priority admission controller computed {policy} from the "
                                   "given PriorityClass name")
            spec["preemptionPolicy"] = policy

    def validate_now(self, a: Attributes) -> bool:
        return (bool(a.subresource) or not a.targets("scheduling.k8s.io", "priorityclasses")
                or not isinstance(a.obj, dict) or not a.obj.get("globalDefault"))

    async def validate(self, a: Attributes) -> None:
        """Only one PriorityClass may be the global default. Upstream: validatePriorityClass"""
        if a.subresource or not a.targets("scheduling.k8s.io", "priorityclasses") or not isinstance(a.obj, dict):
            return
        if not a.obj.get("globalDefault"):
            return
        dpc = await self.default_priority_class()
        if dpc is None:
            return
        name = dpc["metadata"]["name"]
        if a.operation is CREATE or name != (a.obj.get("metadata") or {}).get("name"):
            raise forbidden(a, f"PriorityClass {name} is already marked as default. Only one default can exist")

    async def priority_class(self, name: str) -> Obj | None:
        """The stored class (defaulted), else a built-in system class, else None."""
        kv = await self.api.storage.get(PREFIX + name)
        if kv is not None:
            return set_defaults_priority_class(kv.obj)
        return SYSTEM_PRIORITY_CLASSES.get(name)

    async def default_priority_class(self) -> Obj | None:
        """The globalDefault class with the lowest value (several may exist after a race).
        Upstream: getDefaultPriorityClass"""
        generation = await self.index.refresh()
        if self._default[0] == generation:
            return self._default[1]
        default = None
        for pc in await self.index.all():
            if pc.get("globalDefault") and (default is None or default.get("value", 0) > pc.get("value", 0)):
                default = pc
        found = set_defaults_priority_class(default) if default is not None else None
        self._default = (generation, found)
        return found


def set_defaults_priority_class(pc: Obj) -> Obj:
    """Upstream: SetDefaults_PriorityClass (preemptionPolicy PreemptLowerPriority)."""
    if pc.get("preemptionPolicy"):
        return pc
    return {**pc, "preemptionPolicy": PREEMPT_LOWER_PRIORITY}


def _keep_priority(spec: Obj, old: Obj | None) -> None:
    """An update keeps what this plugin set at create; validation refuses any other change."""
    old_spec = (old or {}).get("spec") or {}
    for field in ("priority", "preemptionPolicy"):
        if spec.get(field) is None and old_spec.get(field) is not None:
            spec[field] = old_spec[field]
