"""NamespaceLifecycle: nothing new in a missing or terminating namespace, and the namespaces the
system needs can never be deleted.

Upstream: Lifecycle.Admit (plugin/pkg/admission/namespace/lifecycle/admission.go).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....api import errors
from ....api.resources import lookup
from ..chain import register
from ..interface import CREATE, DELETE, Attributes, Operation, Plugin, forbidden
from ._index import PrefixIndex

if TYPE_CHECKING:
    from ...server import APIServer

Obj = dict[str, Any]

# Upstream: the --immortal-namespaces default (metav1.NamespaceDefault, NamespaceSystem,
# NamespacePublic, corev1.NamespaceNodeLease).
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# Creating a review answers a question and stores nothing: telling whether its namespace exists
# would leak information. Upstream: accessReviewResources.
ACCESS_REVIEWS = frozenset({("authorization.k8s.io", "localsubjectaccessreviews")})

_NAMESPACES = lookup("", "v1", "namespaces")
assert _NAMESPACES is not None
_NAMESPACE_KEY = _NAMESPACES.key("", "")          # + name: the storage key of a namespace


@register
class NamespaceLifecycle(Plugin):
    NAME = "NamespaceLifecycle"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE, Operation.DELETE})
    MUTATING = True

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        # The namespaces, from the store's watch: as current as a read, and no coroutine.
        self.index = PrefixIndex(api.storage, _NAMESPACE_KEY)
        self._primed = False

    def admit_now(self, a: Attributes) -> bool:
        # (_concerns only for the requests it may say no to or refuse: this runs on every write)
        if (a.operation is DELETE or a.kind == "Namespace" or not a.namespace
                or a.resource == "localsubjectaccessreviews") and not self._concerns(a):
            return True
        ns = self.index.get_now("", _NAMESPACE_KEY + a.namespace)
        if type(ns) is not dict:           # not listed yet, or missing: a read decides (admit)
            return False
        a.namespace_obj = ns               # _check, written out
        if a.operation is CREATE and (ns.get("status") or {}).get("phase") == "Terminating":
            raise namespace_terminating(a)
        return True

    async def admit(self, a: Attributes) -> None:
        if not self._concerns(a):
            return
        kv = await self.api.storage.get(_NAMESPACE_KEY + a.namespace)
        if kv is None:
            raise errors.NotFound("", "namespaces", a.namespace)
        if not self._primed:
            self._primed = True
            await self.index.refresh()
        _check(a, kv.obj)

    @staticmethod
    def _concerns(a: Attributes) -> bool:
        """Whether the request's namespace must exist (and not be terminating); refuses the
        deletion of an immortal namespace."""
        is_namespace = a.group == "" and a.kind == "Namespace"
        if a.operation is DELETE and is_namespace and a.name in IMMORTAL_NAMESPACES:
            raise forbidden(a, "this namespace may not be deleted")
        if is_namespace or not a.namespace or a.operation is DELETE:
            return False
        return (a.group, a.resource) not in ACCESS_REVIEWS


def _check(a: Attributes, ns: Obj) -> None:
    a.namespace_obj = ns
    if a.operation is CREATE and (ns.get("status") or {}).get("phase") == "Terminating":
        raise namespace_terminating(a)


def namespace_terminating(a: Attributes) -> errors.StatusError:
    """Upstream: admission.NewForbidden + the NamespaceTerminating cause."""
    return forbidden(
        a, f"unable to create new content in namespace {a.namespace} because it is being terminated",
        [{"reason": errors.NAMESPACE_TERMINATING_CAUSE, "message": f"namespace {a.namespace} is being terminated",
          "field": "metadata.namespace"}])
