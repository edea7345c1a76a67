"""Loading an audit policy file: upstream's decoding and validation, and their messages."""
from __future__ import annotations

import logging
import pathlib

import pytest

from kubeplane.apiserver.audit import policy as p
from kubeplane.apiserver.audit.options import AuditOptions

HEAD = "apiVersion: audit.k8s.io/v1\nkind: Policy\n"


def test_a_full_policy() -> None:
    policy = p.load_policy((HEAD + """
omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
  resources:
  - group: ""
    resources: ["endpoints", "services", "services/status"]
- level: RequestResponse
  userGroups: ["system:masters"]
  namespaces: ["kube-system"]
  omitStages: [ResponseStarted]
  omitManagedFields: false
  resources:
  - group: apps
    resources: ["deployments"]
    resourceNames: ["coredns"]
- level: Metadata
  nonResourceURLs: ["/healthz*", "/version"]
- level: Metadata
""").encode())
    assert policy.omit_stages == ("RequestReceived",) and policy.omit_managed_fields is True
    none, rr, nonres, default = policy.rules
    assert none == p.PolicyRule("None", users=("system:kube-proxy",), verbs=("watch",), resources=(
        p.GroupResources("", ("endpoints", "services", "services/status")),))
    assert rr.resources == (p.GroupResources("apps", ("deployments",), ("coredns",)),)
    assert (rr.user_groups, rr.namespaces, rr.omit_stages, rr.omit_managed_fields) == (
        ("system:masters",), ("kube-system",), ("ResponseStarted",), False)
    assert nonres.non_resource_urls == ("/healthz*", "/version") and default == p.PolicyRule("Metadata")


@pytest.mark.parametrize(("body", "message"), [
    ("rules: []\n", "loaded illegal policy with 0 rules"),
    ("rules:\n- users: [a]\n", "rules[0].level: Required value"),
    ("rules:\n- level: Everything\n",
     'rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", '
     '"RequestResponse"'),
    ("omitStages: [Later]\nrules:\n- level: None\n",
     'omitStages[0]: Invalid value: "Later": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic'),
    ("rules:\n- level: None\n  nonResourceURLs: [metrics, /a*b]\n",
     "[rules[0].nonResourceURLs[0]: Invalid value: \"metrics\": non-resource URL rules must begin with a '/' "
     "character, rules[0].nonResourceURLs[1]: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be "
     "the final character of the rule]"),
    ("rules:\n- level: None\n  nonResourceURLs: [/metrics]\n  namespaces: [default]\n",
     'rules[0].nonResourceURLs: Invalid value: ["/metrics"]: rules cannot apply to both regular resources '
     "and non-resource URLs"),
    ("rules:\n- level: None\n  resources: [{group: apps, resourceNames: [x]}]\n",
     'rules[0].resources.resourceNames: Invalid value: ["x"]: using resourceNames requires at least one resource'),
    ("rules:\n- level: None\n  resources: [{group: Apps_Group, resources: [x]}]\n",
     'rules[0].resources.group: Invalid value: "Apps_Group": a lowercase RFC 1123 subdomain must consist of '
     "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
     "(e.g. 'example.com', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ("rules:\n- level: None\n  users: alice\n",
     "failed decoding: json: cannot unmarshal string into Go struct field PolicyRule.users of type []string"),
])
def test_invalid_policies(body: str, message: str) -> None:
    with pytest.raises(p.PolicyError) as e:
        p.load_policy((HEAD + body).encode())
    assert str(e.value) == message


def test_kind_and_version_are_checked() -> None:
    with pytest.raises(p.PolicyError, match='^failed decoding: no kind "Policy" is registered for version '
                                            '"audit.k8s.io/v1beta1"'):
        p.load_policy(b"apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n")
    with pytest.raises(p.PolicyError, match="^failed decoding: Object 'Kind' is missing in"):
        p.load_policy(b"apiVersion: audit.k8s.io/v1\nrules: [{level: None}]\n")
    with pytest.raises(p.PolicyError, match="^failed decoding: error converting YAML to JSON: yaml: line"):
        p.load_policy(b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [\n")


def test_unknown_fields_are_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """Upstream falls back to lenient decoding, with a warning."""
    with caplog.at_level(logging.WARNING):
        policy = p.load_policy((HEAD + "rules:\n- level: Metadata\n  verb: [get]\n").encode())
    assert policy.rules == (p.PolicyRule("Metadata"),)
    assert 'unknown field "rules[0].verb"' in caplog.text


def test_the_file_and_the_flag_in_the_message(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "policy.yaml"
    f.write_text(HEAD + "rules: []\n")
    with pytest.raises(ValueError) as e:
        AuditOptions(policy_file=str(f), log_path="-").load_policy()
    assert str(e.value) == f"loading audit policy file: loaded illegal policy with 0 rules: from file {f}"
    with pytest.raises(ValueError, match=r"^loading audit policy file: failed to read file path '/nonexistent/p.yaml'"):
        AuditOptions(policy_file="/nonexistent/p.yaml", log_path="-").load_policy()


def test_log_option_checks() -> None:
    """Upstream: AuditLogOptions.Validate (only with --audit-log-path)."""
    assert AuditOptions(log_maxage=-1).validate() == []
    assert AuditOptions(log_path="a.log", log_maxage=-1, log_maxsize=-2).validate() == [
        "--audit-log-maxage -1 can't be a negative number", "--audit-log-maxsize -2 can't be a negative number"]
    assert AuditOptions(log_path="a.log", log_mode="fast").validate() == [
        'invalid audit log mode fast, allowed modes are "batch,blocking,blocking-strict"']
    assert AuditOptions(log_path="a.log", log_version="audit.k8s.io/v1beta1").validate() == [
        'invalid group version, allowed versions are ["audit.k8s.io/v1"]']
    assert AuditOptions(log_path="a.log", log_format="xml").validate() == [
        'invalid audit log format xml, allowed formats are "legacy,json"']
