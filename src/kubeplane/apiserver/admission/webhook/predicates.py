"""Whether a request is in a webhook's namespaceSelector and objectSelector.

Upstream: Matcher.MatchNamespaceSelector (predicates/namespace/matcher.go) and
Matcher.MatchObjectSelector (predicates/object/matcher.go). A selector that did not parse (the
configuration's validation refuses most) is an internal error, raised only when the webhook's
rules match the request (ShouldCallHook asks the rules first).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....api import errors, labels
from ....api.resources import lookup
from ..interface import Attributes, Operation

if TYPE_CHECKING:
    from ...server import APIServer

Obj = dict[str, Any]

_NAMESPACES = lookup("", "v1", "namespaces")
assert _NAMESPACES is not None
_NAMESPACE_KEY = _NAMESPACES.key("", "")          # + name: the storage key of a namespace


class SelectorError(Exception):
    """A selector of the configuration did not parse (upstream: GetParsedNamespaceSelector's error)."""


def parse_selector(ls: Any) -> labels.Selector | SelectorError:
    """The parsed selector ({} or null selects everything), or the reason it does not parse."""
    try:
        return labels.from_label_selector(ls if isinstance(ls, dict) else {}) or labels.EVERYTHING
    except (errors.StatusError, KeyError, TypeError, AttributeError) as e:
        return SelectorError(str(e) or type(e).__name__)


def internal_error(message: str) -> errors.StatusError:
    """apierrors.NewInternalError: 500 `Internal error occurred: <message>`, the message as its cause."""
    return errors.StatusError(500, "InternalError", f"Internal error occurred: {message}",
                              {"causes": [{"message": message}]})


async def match_namespace_selector(api: APIServer, sel: labels.Selector | SelectorError,
                                   a: Attributes) -> tuple[bool, errors.StatusError | None]:
    """Upstream: MatchNamespaceSelector — (matches, error). A cluster-scoped request other than
    a namespace's own is never exempted; a namespace being created or updated is matched by the
    labels it is given; otherwise the namespace's stored labels (NotFound: its 404)."""
    if not a.namespace and a.resource != "namespaces":
        return True, None
    if isinstance(sel, SelectorError):
        return False, internal_error(str(sel))
    if not sel:
        return True, None
    if (a.resource == "namespaces" and a.group == "" and not a.subresource
            and a.operation in (Operation.CREATE, Operation.UPDATE)):
        ns_labels = ((a.obj or {}).get("metadata") or {}).get("labels")
    else:
        # upstream gives a namespace's own requests its name as their namespace
        name = a.namespace or (a.name if a.resource == "namespaces" and a.group == "" else "")
        ns = a.namespace_obj
        if ns is None or (ns.get("metadata") or {}).get("name") != name:
            kv = await api.storage.get(_NAMESPACE_KEY + name) if name else None
            if kv is None:
                return False, errors.NotFound("", "namespaces", name)
            ns = kv.obj
        ns_labels = (ns.get("metadata") or {}).get("labels")
    return labels.matches(sel, ns_labels if isinstance(ns_labels, dict) else None), None


def _match_object(obj: Obj | None, sel: labels.Selector) -> bool:
    """Upstream: matchObject — no object (or no metadata) never matches."""
    if not isinstance(obj, dict):
        return False
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return False
    obj_labels = meta.get("labels")
    return labels.matches(sel, obj_labels if isinstance(obj_labels, dict) else None)


def match_object_selector(sel: labels.Selector | SelectorError,
                          a: Attributes) -> tuple[bool, errors.StatusError | None]:
    """Upstream: MatchObjectSelector — the new or the old object's labels match."""
    if isinstance(sel, SelectorError):
        return False, internal_error(str(sel))
    if not sel:
        return True, None
    return _match_object(a.obj, sel) or _match_object(a.old_obj, sel), None
