"""MutatingAdmissionPolicies and their bindings (strategies: admissionpolicy.py)."""
from __future__ import annotations

from ....api.defaulting import admissionregistration as defaulting
from ....api.validation import admissionregistration as validation
from ...tables import admissionregistration as tables
from ..definition import ResourceDefinition
from ..registry import register
from .admissionpolicy import _DEF, GROUP, GenerationStrategy

MUTATING_ADMISSION_POLICIES = register(ResourceDefinition(
    GROUP, "v1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies", "mutatingadmissionpolicy", False,
    _DEF + "MutatingAdmissionPolicy", categories=("api-extensions",),
    strategy=GenerationStrategy(),
    defaulter=defaulting.set_defaults_admission_policy,
    validate=validation.validate_mutating_admission_policy,
    validate_update=validation.validate_mutating_admission_policy_update,
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
