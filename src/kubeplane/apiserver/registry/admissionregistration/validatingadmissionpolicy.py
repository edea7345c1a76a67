"""ValidatingAdmissionPolicies (with /status) and their bindings (strategies: admissionpolicy.py)."""
from __future__ import annotations

from ....api.defaulting import admissionregistration as defaulting
from ....api.resources import STATUS
from ....api.validation import admissionregistration as validation
from ...cel import validation as cel_validation
from ...tables import admissionregistration as tables
from ..definition import ResourceDefinition
from ..registry import register
from .admissionpolicy import _DEF, GROUP, GenerationStrategy, PolicyStrategy

VALIDATING_ADMISSION_POLICIES = register(ResourceDefinition(
    GROUP, "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", "validatingadmissionpolicy", False,
    _DEF + "ValidatingAdmissionPolicy", categories=("api-extensions",),
    subresources=(STATUS("ValidatingAdmissionPolicy"),),
    strategy=PolicyStrategy(),
    defaulter=defaulting.set_defaults_admission_policy,
    validate=cel_validation.validate_validating_admission_policy,           # structural + CEL (issue 12)
    validate_update=cel_validation.validate_validating_admission_policy_update,
    columns=tables.validating_policy_columns, printer=tables.print_validating_policy,
))

VALIDATING_ADMISSION_POLICY_BINDINGS = register(ResourceDefinition(
    GROUP, "v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
    "validatingadmissionpolicybinding", False, _DEF + "ValidatingAdmissionPolicyBinding",
    categories=("api-extensions",),
    strategy=GenerationStrategy(),
    defaulter=defaulting.set_defaults_admission_policy_binding,
    validate=validation.validate_validating_admission_policy_binding,
    validate_update=validation.validate_validating_admission_policy_binding_update,
    columns=tables.binding_columns, printer=tables.print_policy_binding,
))
