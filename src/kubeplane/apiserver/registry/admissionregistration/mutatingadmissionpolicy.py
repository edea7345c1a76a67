"""MutatingAdmissionPolicies and their bindings (strategies: admissionpolicy.py)."""
from __future__ import annotations

from ....api.defaulting import admissionregistration as defaulting
from ....api.errors import FieldError
from ....api.validation import admissionregistration as validation
from ...tables import admissionregistration as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj
from .admissionpolicy import _DEF, GROUP, GenerationStrategy


def validate_policy(obj: Obj) -> list[FieldError]:
    """The structural checks and the CEL ones (the engine imported on first use, not at start)."""
    from ...cel import validation as cel_validation
    return cel_validation.validate_mutating_admission_policy(obj)


def validate_policy_update(new: Obj, old: Obj) -> list[FieldError]:
    from ...cel import validation as cel_validation
    return cel_validation.validate_mutating_admission_policy_update(new, old)

MUTATING_ADMISSION_POLICIES = register(ResourceDefinition(
    GROUP, "v1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies", "mutatingadmissionpolicy", False,
    _DEF + "MutatingAdmissionPolicy", categories=("api-extensions",),
    strategy=GenerationStrategy(),
    defaulter=defaulting.set_defaults_admission_policy,
    validate=validate_policy,
    validate_update=validate_policy_update,
    columns=tables.mutating_policy_columns, printer=tables.print_mutating_policy,
))

MUTATING_ADMISSION_POLICY_BINDINGS = register(ResourceDefinition(
    GROUP, "v1", "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings",
    "mutatingadmissionpolicybinding", False, _DEF + "MutatingAdmissionPolicyBinding", categories=("api-extensions",),
    strategy=GenerationStrategy(),
    defaulter=defaulting.set_defaults_admission_policy_binding,
    validate=validation.validate_mutating_admission_policy_binding,
    validate_update=validation.validate_mutating_admission_policy_binding_update,
    columns=tables.binding_columns, printer=tables.print_policy_binding,
))
