"""A mutating plugin's patched object, made the request's object again: decoded as its kind and
defaulted, as upstream ends a mutating webhook's and a MutatingAdmissionPolicy's dispatch (the
patched JSON decoded into the kind's Go type, then the scheme's defaulting)."""
from __future__ import annotations

from typing import Any

from ...api.decode import typed_decode
from ..registry import scheme
from ..registry.registry import REGISTRY
from .interface import Attributes

Obj = dict[str, Any]


def decode_and_default(patched: Obj, a: Attributes) -> str:
    """The typed decoder's complaint about patched ("" if none); without one, patched is
    defaulted in place as the request's resource or status subresource is."""
    assert a.obj is not None
    d = REGISTRY.for_type(str(a.obj.get("apiVersion") or ""), str(a.obj.get("kind") or ""))
    def_name = getattr(d, "definition", None)
    if def_name:
        type_err, _ = typed_decode(patched, def_name)
        if type_err:
            return str(type_err)
    if a.subresource == "status":
        scheme.set_defaults_except_spec(patched)
    elif not a.subresource:
        scheme.set_defaults(patched)
    return ""
