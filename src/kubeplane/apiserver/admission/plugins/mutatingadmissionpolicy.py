"""MutatingAdmissionPolicy: CEL mutations of writes, chosen by policies and their bindings.

Upstream: pkg/admission/plugin/policy/mutating (plugin.go, dispatcher.go dispatchInvocations
and dispatchOne, patch/smd.go, patch/json_patch.go, reinvocationcontext.go) and
policy/generic (policy_dispatcher.go Dispatch: the errors and failurePolicy). For each policy
whose matchConstraints select the request and each binding of it whose matchResources do
too, with each of the binding's params: the policy's matchConditions, then its mutations in
order, each seeing the object as the previous one left it:
- ApplyConfiguration: an `Object{...}` expression merged into the object as server-side apply
  merges (list maps by key, granular maps by key); setting an atomic list, map or struct is
  refused (`may not mutate atomic arrays, maps or structs`), as upstream's validatePatch.
- JSONPatch: a list of `JSONPatch{op, path, value, from}` applied in order (a failed `test`
  leaves the object as it was).
The result is defaulted and must still decode as the kind. Errors (of matchConditions, an
expression or a patch) are the policy's errors, dropped with failurePolicy Ignore and otherwise
refused: 403, reason Invalid, `policy '<p>' with binding '<b>' denied request: <error>`.

Reinvocation (reinvocationPolicy IfNeeded): a policy invoked before a change made by a later
one, or by a plugin that runs after this one (the webhook plugin re-runs the chain up to it), is
invoked once more; never a policy not invoked in the first round.

Policies and bindings come from a watch-fed index (PrefixIndex) and are compiled when they
change; a write no bound policy can concern costs one look at the index.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ....api import errors
from ...registry.registry import REGISTRY
from .. import policy_metrics
from ..chain import _NOTHING, register
from ..interface import Attributes, Operation, forbidden
from ..patched import decode_and_default
from ._policy import PolicyIndex, PolicyPlugin, _ConfigError

if TYPE_CHECKING:
    from ...cel import compiler
    from ...cel.matchconditions import MatchConditions
    from ...server import APIServer

Obj = dict[str, Any]

PLUGIN_NAME = "MutatingAdmissionPolicy"
POLICIES = "/registry/mutatingadmissionpolicies/"
BINDINGS = "/registry/mutatingadmissionpolicybindings/"
PREFIX = "/registry/mutatingadmissionpolic"
APPLY_CONFIGURATION, JSON_PATCH = "ApplyConfiguration", "JSONPatch"


@dataclass(slots=True)
class Mutation:
    patch_type: str
    compiled: compiler.CompilationResult
    errors: list[str]                      # upstream's type mismatches of the object literals


@dataclass(slots=True)
class Mutator:
    """A policy's compiled expressions. Upstream: PolicyEvaluator."""
    policy: Obj
    env: compiler.Env
    failure_policy: str
    reinvoke_if_needed: bool
    match_conditions: MatchConditions
    variables: list[tuple[str, compiler.CompilationResult]]
    mutations: list[Mutation]
    bindings: list[Obj] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.policy["metadata"]["name"])


def compile_policy(policy: Obj) -> Mutator:
    """Upstream: compilePolicy (mutating/compilation.go)."""
    from ...cel import compiler, mutation
    from ...cel.matchconditions import MatchConditions
    from ...cel.validation import policy_variables
    spec = policy.get("spec") or {}
    env = compiler.env(*policy_variables(spec))
    mutations = []
    for m in spec.get("mutations") or []:
        patch_type = str(m.get("patchType") or "")
        source = (m.get("applyConfiguration") if patch_type == APPLY_CONFIGURATION else m.get("jsonPatch")) or {}
        expression = str(source.get("expression") or "")
        rewritten = mutation.rewrite(expression)
        compiled = dataclasses.replace(env.compile(rewritten.expression, (compiler.ANY,)), expression=expression)
        mutations.append(Mutation(patch_type, compiled, rewritten.errors))
    failure_policy = spec.get("failurePolicy") or "Fail"
    return Mutator(
        policy=policy, env=env, failure_policy=failure_policy,
        reinvoke_if_needed=spec.get("reinvocationPolicy") == "IfNeeded",
        match_conditions=MatchConditions(spec.get("matchConditions") or [], failure_policy, env.variables),
        variables=[(str(v.get("name", "")), env.compile(str(v.get("expression", "")), (compiler.ANY,)))
                   for v in spec.get("variables") or []],
        mutations=mutations)


@dataclass(slots=True)
class PolicyError:
    """Upstream: generic.PolicyError."""
    mutator: Mutator
    binding: Obj | None
    message: str
    reason: str = ""

    def __str__(self) -> str:
        if self.binding is not None:
            return (f"policy '{self.mutator.name}' with binding '{self.binding['metadata']['name']}' "
                    f"denied request: {self.message}")
        return f"policy {errors.go_quote(self.mutator.name)} denied request: {self.message}"


@dataclass(slots=True)
class _ReinvokeContext:
    """Upstream: policyReinvokeContext — per request, kept on the attributes."""
    previously_invoked: set[tuple[str, str, str]] = field(default_factory=set)
    reinvoke: set[tuple[str, str, str]] = field(default_factory=set)
    last_output: Obj | None = None
    rounds: int = 0

    def require_reinvoking_previously_invoked(self) -> None:
        self.reinvoke |= self.previously_invoked
        self.previously_invoked = set()


@register
class MutatingAdmissionPolicy(PolicyPlugin):
    NAME = PLUGIN_NAME
    MUTATING = True
    CONFIG_PREFIX = PREFIX
    CONFIG_PREFIXES = (POLICIES, BINDINGS)
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE, Operation.DELETE, Operation.CONNECT})

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self.index = PolicyIndex(api.storage, POLICIES, BINDINGS)
        self._generation: tuple[int, int] | None = (-1, -1)
        self.mutators: list[Mutator] = []

    def dormant(self) -> bool | None:
        """No policy bound (None until the policies are compiled as of now)."""
        if self.index.poll() != self._generation:
            return None
        return not self.mutators

    def admit(self, a: Attributes) -> Awaitable[None]:  # type: ignore[override]
        """Nothing to await while no policy is bound and neither index changed."""
        if self.index.poll() != self._generation:
            return self._rebuild_and_admit(a)
        return self._admit(a) if self.mutators and a.obj is not None else _NOTHING

    async def _rebuild_and_admit(self, a: Attributes) -> None:
        await self._rebuild()
        if self.mutators and a.obj is not None:
            await self._admit(a)

    async def _rebuild(self) -> None:
        """Compile the policies that have a binding."""
        generation = await self.index.refresh()
        policies, bindings = self.index.polled()
        by_policy: dict[str, list[Obj]] = {}
        for b in bindings:
            by_policy.setdefault((b.get("spec") or {}).get("policyName", ""), []).append(b)
        mutators = []
        for p in sorted(policies, key=lambda p: p["metadata"]["name"]):
            bound = by_policy.get(p["metadata"]["name"])
            if bound:
                m = compile_policy(p)
                m.bindings = sorted(bound, key=lambda b: b["metadata"]["name"])
                mutators.append(m)
        self.mutators, self._generation = mutators, generation

    async def _admit(self, a: Attributes) -> None:
        """Upstream: Dispatch and dispatchInvocations; a second round when a policy changed the
        object and one invoked before it asks to be reinvoked (the chain's reinvoker)."""
        if a.reinvocation is None:
            a.reinvocation = {}
        rc = a.reinvocation.get(PLUGIN_NAME)
        if rc is None:
            rc = a.reinvocation[PLUGIN_NAME] = _ReinvokeContext()
            changed = await self._dispatch(a, rc, reinvoke=False)
            if changed and rc.reinvoke:
                await self._second_round(a, rc)
            return
        if rc.rounds >= 2:
            return
        # called again by a later plugin's reinvocation round (the webhooks'): reinvoke
        if a.obj != rc.last_output:
            rc.require_reinvoking_previously_invoked()
        await self._dispatch(a, rc, reinvoke=True)

    async def _second_round(self, a: Attributes, rc: _ReinvokeContext) -> None:
        """Upstream's reinvoker: the mutating plugins before this one, then the policies to
        reinvoke."""
        for p in self.api.admission.admitters(a):
            if p.NAME == self.NAME:
                break
            await p.admit(a)
        if a.obj != rc.last_output:
            rc.require_reinvoking_previously_invoked()
        await self._dispatch(a, rc, reinvoke=True)

    async def _dispatch(self, a: Attributes, rc: _ReinvokeContext, reinvoke: bool) -> bool:
        """One round over the invocations; whether the object changed."""
        from ...cel.activation import admission_request, namespace_object
        rc.rounds += 1
        policy_errors: list[PolicyError] = []
        ns_holder: list[Obj | None] = []
        changed_any = False
        for m in self.mutators:
            constraints = (m.policy.get("spec") or {}).get("matchConstraints") or {}
            if not await self._matches(constraints, a, ns_holder, require_rules=True):
                continue
            for b in m.bindings:
                bspec = b.get("spec") or {}
                if not await self._matches(bspec.get("matchResources") or {}, a, ns_holder, require_rules=False):
                    continue
                try:
                    params = await self._params((m.policy.get("spec") or {}).get("paramKind"), bspec.get("paramRef"), a)
                except _ConfigError as e:
                    policy_errors.append(PolicyError(m, b, f"failed to configure binding: {e}"))
                    continue
                namespace = None
                if a.namespace and not (a.kind == "Namespace" and a.group == ""):
                    namespace = namespace_object(await self._namespace(a, ns_holder))
                for param in params:
                    key = (m.name, b["metadata"]["name"], _param_key(param))
                    if reinvoke and key not in rc.reinvoke:
                        continue
                    before = copy.deepcopy(a.obj)
                    error = self._invoke(m, b, a, param, admission_request(a), namespace)
                    if error is not None:
                        policy_errors.append(PolicyError(m, b, error, "Invalid"))
                        continue
                    if a.obj != before:
                        rc.require_reinvoking_previously_invoked()
                        changed_any = True
                    if m.reinvoke_if_needed:
                        rc.previously_invoked.add(key)
        rc.last_output = copy.deepcopy(a.obj)
        _raise_policy_errors(a, [e for e in policy_errors if e.mutator.failure_policy != "Ignore"])
        return changed_any

    def _invoke(self, m: Mutator, b: Obj, a: Attributes, param: Obj | None, request: Obj,
                namespace: Obj | None) -> str | None:
        """The policy's matchConditions and mutations for one binding and param: None, or the
        error (the object is left as the mutations before the error made it). Each mutation
        run is observed in the check metrics (upstream: the dispatcher around dispatchOne)."""
        from ...cel import compiler
        from ...cel.activation import AUTHORIZER, REQUEST_RESOURCE, request_resource
        with compiler.authorizer(getattr(self.api, "authorizer", None), a.user):
            data: Obj = {"object": a.obj, "oldObject": a.old_obj, "request": request, "params": param,
                         "namespaceObject": namespace, "authorizer": AUTHORIZER,
                         REQUEST_RESOURCE: request_resource(a), "variables": {}}
            if m.match_conditions:
                matched = m.match_conditions.match_activation(m.env.activation(data))
                if matched.error:
                    return matched.error
                if not matched.matches:
                    return None
            budget = compiler.Budget()
            for mutation in m.mutations:
                if a.obj is None:
                    return None
                started = time.perf_counter()
                error = self._mutate(m, mutation, a, data, budget)
                policy_metrics.observe(policy_metrics.MUTATING, (m.name, str(b["metadata"]["name"]),
                                                                 policy_metrics.error_type(error)),
                                       time.perf_counter() - started)
                if error is not None:
                    return error
        return None

    def _mutate(self, m: Mutator, mutation: Mutation, a: Attributes, data: Obj, budget: compiler.Budget) -> str | None:
        """One mutation applied to a.obj: None, or its error. Upstream: dispatchOne"""
        from ...cel import compiler
        data["object"] = a.obj
        activation = self._activation(m, data, budget)
        if mutation.compiled.program is None:
            return f"compilation error: {mutation.compiled.error}"
        r = compiler.evaluate(mutation.compiled, activation)
        if not budget.charge(r.cost, r.refine):
            return compiler.OUT_OF_BUDGET
        if r.error:
            return r.error
        if mutation.errors:
            return mutation.errors[0]
        assert a.obj is not None            # _invoke runs no mutation without an object
        try:
            patched = _patch(mutation.patch_type, a.obj, r.value)
            if patched is not a.obj:
                _settle(patched, a)
        except _PatchError as e:
            return str(e)
        return None

    @staticmethod
    def _activation(m: Mutator, data: Obj, budget: compiler.Budget) -> Any:
        """Variables evaluated in order against the current object, each seeing the earlier ones."""
        from ...cel import compiler
        variables: Obj = {}
        data["variables"] = variables
        activation = m.env.activation(data)
        for name, compiled in m.variables:
            r = compiler.evaluate(compiled, activation)
            budget.charge(r.cost, r.refine)
            if not r.error:
                variables[name] = r.value
                activation = m.env.activation(data)
        return activation


class _PatchError(Exception):
    pass


def _param_key(param: Obj | None) -> str:
    meta = (param or {}).get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _patch(patch_type: str, obj: Obj, value: Any) -> Obj:
    """The object with the mutation's result applied (obj itself when nothing changes)."""
    if patch_type == JSON_PATCH:
        return _json_patch(obj, value)
    return _apply_configuration(obj, value)


def _apply_configuration(obj: Obj, value: Any) -> Obj:
    """Upstream: applyConfigPatcher.Patch and ApplyStructuredMergeDiff."""
    from ...patch._schema import root
    from ...patch.apply import merge
    if not isinstance(value, dict):
        raise _PatchError(f"invalid return type: {_go_type(value)}")
    d = REGISTRY.for_type(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    def_name = getattr(d, "definition", None)
    node = root(def_name) if def_name else None
    atomics = _atomics(value, node, "")
    if atomics:
        raise _PatchError("error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or "
                          f"structs: {', '.join(atomics)}")
    patch = dict(value)
    patch.pop("apiVersion", None)
    patch.pop("kind", None)
    return dict(merge(obj, patch, node))


def _atomics(value: Any, node: Any, path: str) -> list[str]:
    """Upstream: findAtomics — the paths of atomic lists, maps and structs the configuration sets."""
    from ...patch._schema import LIST, SCALAR, shape_of
    if node is None or not isinstance(value, (dict, list)):
        return []
    shape = shape_of(node, value)
    out = [path] if shape.atomic and shape.kind != SCALAR else []
    if isinstance(value, dict) and shape.kind != LIST:
        for k, v in value.items():
            out += _atomics(v, shape.child(k), f"{path}.{k}")
    elif isinstance(value, list) and shape.kind == LIST:
        for i, v in enumerate(value):
            out += _atomics(v, shape.child(""), f"{path}[{i}]")
    return out


def _json_patch(obj: Obj, value: Any) -> Obj:
    """Upstream: jsonPatcher.Patch — the operations in order; a failed test leaves obj as it was."""
    import jsonpatch
    import jsonpointer
    if not isinstance(value, list):
        raise _PatchError("type mismatch: JSONPatchType.expression should evaluate to array")
    ops = []
    for op in value:
        if not isinstance(op, dict):
            raise _PatchError("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch")
        out = {"op": op.get("op", ""), "path": op.get("path", "")}
        if op.get("from"):
            out["from"] = op["from"]
        if "value" in op:
            out["value"] = op["value"]
        ops.append(out)
    if not ops:
        return obj
    try:
        return dict(jsonpatch.JsonPatch(ops).apply(obj, in_place=False))
    except jsonpatch.JsonPatchTestFailed:
        return obj
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError, IndexError,
            ValueError) as e:
        raise _PatchError(f"JSON Patch: {e}") from None


def _settle(patched: Obj, a: Attributes) -> None:
    """Upstream: dispatchOne's end — the result decoded as the kind (kind and apiVersion kept),
    defaulted, and made the request's object (in place: the handler holds a.obj)."""
    assert a.obj is not None
    if patched.get("apiVersion") != a.obj.get("apiVersion") or patched.get("kind") != a.obj.get("kind"):
        raise _PatchError(f"patch ({patched.get('apiVersion')}, Kind={patched.get('kind')}) and original object "
                          f"({a.obj.get('apiVersion')}, Kind={a.obj.get('kind')}) are not of the same gvk")
    if type_err := decode_and_default(patched, a):
        raise _PatchError(type_err)
    a.obj.clear()
    a.obj.update(patched)


def _go_type(v: Any) -> str:
    return {bool: "bool", int: "int64", float: "float64", str: "string", list: "[]interface {}"}.get(type(v), "<nil>")


def _raise_policy_errors(a: Attributes, errs: list[PolicyError]) -> None:
    """Upstream: the end of policyDispatcher.Dispatch — a 403 whose message is the first
    error's (its reason, if any), every error a cause."""
    if not errs:
        return
    base = forbidden(a, "admission request denied by policy")
    message = str(errs[0])
    details = dict(base.details or {})
    details["causes"] = [{"message": str(e)} for e in errs]
    raise errors.StatusError(base.code, errs[0].reason or base.reason, message, details)


__all__ = ["MutatingAdmissionPolicy", "compile_policy"]
