"""CEL validation rules of CustomResourceDefinitions (x-kubernetes-validations), on the
server's CEL engine (kubeplane.apiserver.cel, loaded when the first rule is compiled).

    install()   # sets the schema library's hooks (idempotent; customresource.py and the CRD registry call it)

- schema.CEL_VALIDATOR_FACTORY: a custom object's rules, evaluated after the schema checks
  unless they found a blocking error (validation.py);
- crd_validation.CEL_HOOK: a CRD's rules compiled when it is written, with upstream's compile
  errors (compilation.py), typed from the schema (decltype.py, typedenv.py);
- crd_validation.CEL_COST_HOOK: their estimated costs, per rule and for the whole CRD (costs.py).

Upstream: k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel (compilation.go,
validation.go, model/) and k8s.io/apiserver pkg/cel.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..schema.structural import Structural

# Upstream: warning.AddWarning(ctx, ...) — the request's warnings, while warnings() collects them.
_WARNINGS: ContextVar[list[str] | None] = ContextVar("celvalidation_warnings", default=None)


@contextmanager
def warnings(into: list[str]) -> Iterator[None]:
    """Collect into `into` the warnings of the rules evaluated in the block (the ratcheted
    errors of an update: the HTTP Warning headers of the response)."""
    token = _WARNINGS.set(into)
    try:
        yield
    finally:
        _WARNINGS.reset(token)


def add_warnings(texts: Iterable[str]) -> None:
    into = _WARNINGS.get()
    if into is not None:
        into.extend(t for t in texts if t not in into)


def _factory(s: Structural) -> Any:
    from .validation import new_validator
    v = new_validator(s, True)
    return v.check if v is not None else None


def install() -> None:
    from .. import schema
    from ..schema import crd_validation
    from .compilation import check_rules
    from .costs import check_costs
    from .validation import check_default
    schema.CEL_VALIDATOR_FACTORY = _factory
    crd_validation.CEL_HOOK = check_rules
    crd_validation.CEL_COST_HOOK = check_costs
    crd_validation.CEL_DEFAULTS_HOOK = check_default
