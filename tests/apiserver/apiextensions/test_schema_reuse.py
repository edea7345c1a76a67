"""A CRD write builds each version's structural schema once: within its validation the CEL
checks get the nodes of the whole schema's (structural.reusing_nodes), and a node's compiled
rules are kept on it (compile_rules), so a big schema with rules is not rebuilt per check."""
from __future__ import annotations

from kubeplane.apiserver.apiextensions import customresource  # noqa: F401  (installs the CEL hooks)
from kubeplane.apiserver.apiextensions.celvalidation.compilation import compile_rules
from kubeplane.apiserver.apiextensions.schema import structural_from, validate_crd_schema
from kubeplane.apiserver.apiextensions.schema.structural import reusing_nodes

SPEC = {"type": "object", "properties": {"a": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "self.a != 'x'"}]}
ROOT = {"type": "object", "properties": {"spec": SPEC}}


def test_nodes_are_reused_only_within_the_scope() -> None:
    s = structural_from(ROOT)
    with reusing_nodes(s):
        assert structural_from(SPEC) is s.properties["spec"]
        assert structural_from(dict(SPEC)) is not s.properties["spec"]     # another dict: built anew
    assert structural_from(SPEC) is not s.properties["spec"]
    broken = structural_from({"type": "object", "properties": {"spec": SPEC}, "$ref": "#/x"})
    assert broken.conversion_errors
    with reusing_nodes(broken):
        assert structural_from(SPEC) is not broken.properties["spec"]


def test_compiled_rules_are_kept_on_the_node() -> None:
    s = structural_from(SPEC)
    first = compile_rules(s, None, False)
    assert compile_rules(s, None, False) is first and compile_rules(s, None, True) is not first
    assert compile_rules(s, [{"rule": "true"}], False) is not first


def test_rule_errors_are_unchanged() -> None:
    bad = {"type": "object", "properties": {"spec": {**SPEC, "x-kubernetes-validations": [{"rule": "self.b == 1"}]}}}
    errs = validate_crd_schema({"openAPIV3Schema": bad}, "spec.versions[0].schema")
    assert [e.field for e in errs] == ["spec.versions[0].schema.openAPIV3Schema.properties[spec]"
                                       ".x-kubernetes-validations[0].rule"]
    assert "undefined field 'b'" in errs[0].detail
