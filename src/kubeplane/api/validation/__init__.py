"""Validation for the kinds we serve, rule for rule as upstream's strategies run it.

Per kind (one module per API group: core, apps, coordination, events):

    validate_x(obj)                     create (ValidateX, then the registry's generic
                                        ObjectMeta check for kinds whose validator skips it)
    validate_x_update(obj, old)         main-resource update: new-object rules + immutability
    validate_x_status_update(obj, old)  /status update
    warnings                            HTTP Warning texts for a create

Each returns upstream's field errors in upstream's order; `errors.Invalid(group, kind,
name, errs)` turns them into the 422 Status. Objects are JSON dicts as decoded; callers
default them first (defaults.set_defaults) exactly like the apiserver does, because
several rules (terminationGracePeriodSeconds, restartPolicy, imagePullPolicy, …) are
"Required" checks on fields defaulting always fills.

Which function validates which kind is the kind's registry definition's (validate,
validate_update, validate_status_update, warnings); the API server dispatches through
apiserver/registry/scheme.py.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api.errors import FieldError

from . import core

Obj = dict[str, Any]

__all__ = ["FieldError", "validate_namespace_finalizers"]

validate_namespace_finalizers = core.validate_namespace_finalizers
