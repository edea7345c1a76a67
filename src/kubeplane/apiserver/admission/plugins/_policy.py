"""What the admission policy plugins share: matching a policy's or binding's constraints, the
request's namespace, and the params a binding names.

Upstream: policy/generic (policy_matcher.go DefinitionMatches/BindingMatches, CollectParams),
used by both ValidatingAdmissionPolicy and MutatingAdmissionPolicy.
"""
from __future__ import annotations

from typing import Any

from ....api import resources
from ....storage.interface import Storage
from ..interface import Attributes, Plugin
from . import validatingadmissionpolicy_matching as matching
from ._index import PrefixIndex

Obj = dict[str, Any]
NAMESPACES = "/registry/namespaces/"


class _ConfigError(Exception):
    pass


class PolicyIndex:
    """A policy kind's objects and its bindings', each from a watch-fed index of its own
    prefix (one index of their common prefix would be woken by the store at every write)."""

    def __init__(self, storage: Storage, policies: str, bindings: str) -> None:
        self._policies = PrefixIndex(storage, policies)
        self._bindings = PrefixIndex(storage, bindings)

    def poll(self) -> tuple[int, int] | None:
        """Both generations after applying what changed, without waiting; None when a (re)list
        is due (PrefixIndex.poll)."""
        p, b = self._policies.poll(), self._bindings.poll()
        return None if p is None or b is None else (p, b)

    async def refresh(self) -> tuple[int, int]:
        return await self._policies.refresh(), await self._bindings.refresh()

    def polled(self) -> tuple[list[Obj], list[Obj]]:
        """The policies and the bindings as of the last poll or refresh, each in key order."""
        return self._policies.polled(), self._bindings.polled()


class PolicyPlugin(Plugin):
    async def _matches(self, constraints: Obj, a: Attributes, ns_holder: list[Obj | None],
                       require_rules: bool) -> matching.Match | None:
        """How a's resource matches the constraints (matchPolicy Equivalent included), or None."""
        m = matching.resource_rules_match(constraints, a, bool(a.namespace), require_rules)
        if m is None or not matching.object_selector_matches(constraints.get("objectSelector"), a):
            return None
        selector = constraints.get("namespaceSelector")
        if not matching.needs_namespace(selector, a):
            return m
        return m if matching.namespace_selector_matches(selector, a, await self._namespace(a, ns_holder)) else None

    async def _namespace(self, a: Attributes, holder: list[Obj | None]) -> Obj | None:
        """The request's namespace, read once per request (NamespaceLifecycle's if it read it)."""
        if not holder:
            ns = a.namespace_obj
            if ns is None and a.namespace:
                kv = await self.api.storage.get(NAMESPACES + a.namespace)
                ns = kv.obj if kv is not None else None
            holder.append(ns)
        return holder[0]

    async def _params(self, param_kind: Obj | None, ref: Obj | None, a: Attributes) -> list[Obj | None]:
        """Upstream: generic.CollectParams."""
        if not param_kind or not ref:
            return [None]
        group, _, version = (param_kind.get("apiVersion") or "").rpartition("/")
        info = resources.for_version_kind(group, version, param_kind.get("kind") or "")
        if info is None:
            raise _ConfigError(f"paramKind kind `{param_kind.get('kind')}` not known")
        ns = ""
        if info.namespaced:
            ns = ref.get("namespace") or a.namespace
            if not ns:
                raise _ConfigError("cannot use namespaced paramRef in policy binding that matches cluster-scoped "
                                   "resources")
        elif ref.get("namespace"):
            raise _ConfigError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
        if ref.get("name"):
            if ref.get("selector") is not None:
                raise _ConfigError("paramRef.name and paramRef.selector are mutually exclusive")
            kv = await self.api.storage.get(info.key(ns, ref["name"]))
            found: list[Obj | None] = [kv.obj] if kv is not None else []
        elif ref.get("selector") is not None:
            prefix = info.prefix + (f"{ns}/" if info.namespaced else "")
            kvs, _ = await self.api.storage.list(prefix)
            found = [kv.obj for kv in kvs
                     if matching.selector_matches(ref["selector"], (kv.obj.get("metadata") or {}).get("labels") or {})]
        else:
            raise _ConfigError("one of name or selector must be provided")
        if not found:
            if ref.get("parameterNotFoundAction") == "Deny":
                raise _ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
            return []
        return found
