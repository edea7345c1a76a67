"""Label and field selectors: upstream's parse/match tables (labels/selector_test.go,
fields/selector_test.go) and the string form of a LabelSelector."""
from __future__ import annotations

import pytest

from kubeplane.api import errors, labels
from kubeplane.apiserver.registry import REGISTRY


def parse_fields(selector, kind, resource="", group=""):
    """labels.parse_fields with the fields of the kind's registry definition, as the server does."""
    d = REGISTRY.for_kind(group, kind)
    return labels.parse_fields(selector, d.field_selectors if d is not None else None)


LBLS = {"app": "web", "tier": "fe", "empty": ""}


@pytest.mark.parametrize("selector,match", [
    ("", True),
    ("app=web", True), ("app==web", True), ("app=db", False),
    ("app!=db", True), ("app!=web", False), ("missing!=x", True),       # != matches an absent key
    ("app in (web,db)", True), ("app in (db)", False), ("missing in (x)", False),
    ("app notin (db)", True), ("app notin (web)", False), ("missing notin (x)", True),
    ("app", True), ("missing", False), ("!missing", True), ("!app", False),
    ("app=web,tier=fe", True), ("app=web,tier=be", False),
    ("app in (web), tier notin (be), !missing", True),
    ("empty=", True), ("empty=x", False), ("tier=", False),
    ("  app  =  web  ", True),
])
def test_parse_and_match(selector, match):
    assert labels.matches(labels.parse(selector), LBLS) is match


def test_parsed_requirements():
    assert labels.parse("a=b,c!=d,e in (f,g),h notin (i),j,!k") == (
        labels.Requirement("a", "=", ("b",)), labels.Requirement("c", "!=", ("d",)),
        labels.Requirement("e", "in", ("f", "g")), labels.Requirement("h", "notin", ("i",)),
        labels.Requirement("j", "exists"), labels.Requirement("k", "!"))


_LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
                "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


# Upstream: the Parser's messages (labels/selector.go); only a requirement's own errors are
# "unable to parse requirement: …", those between requirements are bare.
@pytest.mark.parametrize("selector,message", [
    ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("=a", "found '=', expected: !, identifier, or 'end of string'"),
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("a,,b", "found ',', expected: identifier after ','"),
    ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
    ("a,", "found '', expected: identifier after ','"),
    ("x==a==b", "found '==', expected: ',' or 'end of string'"),
    ("!x=a", "found '=', expected: ',' or 'end of string'"),
    ("a===b", "unable to parse requirement: found '=', expected: identifier"),     # "==" then "="
    ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
    ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
    ("x nott in (y)", "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"),
    # NewRequirement's field errors (no path: the key's is Go's nil path, "<nil>")
    ("app=web_", f'unable to parse requirement: values[0][app]: Invalid value: "web_": {_LABEL_VALUE}'),
    ("x<a", 'unable to parse requirement: values[0]: Invalid value: "a": for \'Gt\', \'Lt\' operators, the value '
            "must be an integer"),
    ("a/b/c", 'unable to parse requirement: <nil>: Invalid value: "a/b/c": a valid label key must consist of '
              "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
              "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
              "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
              "(e.g. 'example.com/MyName')"),
])
def test_parse_errors_are_bad_requests(selector, message):
    with pytest.raises(errors.BadRequest) as e:
        labels.parse(selector)
    assert e.value.message == message


# Upstream: TestSetSelectorParser and TestSelectorParse (labels/selector_test.go), valid inputs.
@pytest.mark.parametrize("selector,parsed", [
    ("\rx", (("x", "exists", ()),)),
    ("this-is-a-dns.domain.com/key-with-dash", (("this-is-a-dns.domain.com/key-with-dash", "exists", ()),)),
    ("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
     (("0.1.2.domain/99", "notin", ("10.10.100.1", "tick.tack.clock")),)),
    ("foo  in\t (abc)", (("foo", "in", ("abc",)),)),
    ("x notin\n (abc)", (("x", "notin", ("abc",)),)),
    ("x in (abc,)", (("x", "in", ("", "abc")),)),
    ("x in (abc,abc)", (("x", "in", ("abc",)),)),
    ("x in ()", (("x", "in", ("",)),)),
    ("x in (a,,a,,a,,a,,)", (("x", "in", ("", "a")),)),
    ("x notin (abc,,def),bar,z in (),w", (("bar", "exists", ()), ("w", "exists", ()),
                                          ("x", "notin", ("", "abc", "def")), ("z", "in", ("",)))),
    ("x>1", (("x", "gt", ("1",)),)),
    ("x<7", (("x", "lt", ("7",)),)),
    ("x notin (, a)", (("x", "notin", ("", "a")),)),
    ("a in (x,y,notin, z,in)", (("a", "in", ("in", "notin", "x", "y", "z")),)),
    ("x= ,z= ", (("x", "=", ("",)), ("z", "=", ("",)))),
])
def test_parse_upstream_table(selector, parsed):
    assert labels.parse(selector) == tuple(labels.Requirement(*r) for r in parsed)


# Upstream: TestRequirementSelectorMatching's Gt rows (a value that is no integer never matches).
@pytest.mark.parametrize("selector,lbls,match", [
    ("z>1", {"z": "2"}, True), ("z>1", {"z": "v2"}, False), ("z>1", {}, False), ("z<5", {"z": "-3"}, True),
    ("z<5", {"z": "5"}, False),
])
def test_greater_and_less_than(selector, lbls, match):
    assert labels.matches(labels.parse(selector), lbls) is match


def test_label_selector_objects():
    assert labels.from_label_selector(None) is None                       # nil selects nothing
    assert labels.from_label_selector({}) == ()                           # {} selects everything
    sel = labels.from_label_selector({"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["fe", "be"]},
        {"key": "env", "operator": "DoesNotExist"}]})
    assert labels.matches(sel, {"app": "web", "tier": "fe"})
    assert not labels.matches(sel, {"app": "web", "tier": "fe", "env": "x"})
    with pytest.raises(errors.BadRequest) as e:
        labels.from_label_selector({"matchExpressions": [{"key": "a", "operator": "Near"}]})
    assert e.value.message == '"Near" is not a valid label selector operator'


@pytest.mark.parametrize("ls,text", [
    ({"matchLabels": {"b": "1", "a": "2"}}, "a=2,b=1"),
    ({"matchLabels": {"tier": "fe"}, "matchExpressions": [{"key": "app", "operator": "In", "values": ["y", "x"]}]},
     "app in (x,y),tier=fe"),
    ({"matchExpressions": [{"key": "b", "operator": "DoesNotExist"}, {"key": "a", "operator": "Exists"},
                           {"key": "c", "operator": "NotIn", "values": ["z"]}]}, "a,!b,c notin (z)"),
    ({}, ""),
])
def test_selector_string_sorts_by_key(ls, text):
    assert labels.selector_string(ls) == text
    assert labels.parse(text) is not None


POD = {"metadata": {"name": "p", "namespace": "ns"},
       "spec": {"nodeName": "n1", "restartPolicy": "Always", "hostNetwork": True},
       "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}}


@pytest.mark.parametrize("selector,match", [
    ("metadata.name=p", True), ("metadata.name==p", True), ("metadata.name!=p", False),
    ("metadata.namespace=ns,spec.nodeName=n1", True), ("spec.nodeName=n2", False),
    ("status.phase=Running", True), ("status.podIP=10.0.0.1", True), ("spec.hostNetwork=true", True),
    ("spec.restartPolicy!=Never", True), ("spec.host=n1", True), ("status.nominatedNodeName=", True),
    ("spec.schedulerName=", True),
])
def test_pod_field_selectors(selector, match):
    assert labels.fields_match(parse_fields(selector, "Pod", "pods"), POD) is match


def test_field_selector_values_are_unescaped():
    """Upstream: fields.splitTerms keeps an escaped comma in its term; UnescapeValue undoes it."""
    pod = {**POD, "metadata": {"name": "a,b=c\\d", "namespace": "ns"}}
    assert labels.fields_match(parse_fields("metadata.name=a\\,b\\=c\\\\d", "Pod", "pods"), pod)
    assert not labels.fields_match(parse_fields("metadata.name=a\\,b", "Pod", "pods"), pod)


@pytest.mark.parametrize("kind,group,selector,message", [
    ("Pod", "", "spec.foo=x", "field label not supported: spec.foo"),
    ("Node", "", "metadata.namespace=x", "field label not supported: metadata.namespace"),
    ("Namespace", "", "metadata.namespace=x", "field label not supported: metadata.namespace"),
    ("Deployment", "apps", "spec.replicas=1",
     '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("Event", "events.k8s.io", "involvedObject.name=x", "field label not supported: involvedObject.name"),
    ("Pod", "", "a", "invalid selector: 'a'; can't understand 'a'"),
    # Upstream: fields.parseSelector — terms sorted, split at the first operator, no trimming,
    # values unescaped (UnescapedRune prints the rune's number)
    ("Pod", "", "=x", "field label not supported: "),
    ("Pod", "", "status.phase = Running", "field label not supported: status.phase "),
    ("Pod", "", "metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
    ("Pod", "", "metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x"),
    ("Pod", "", "metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
    ("Pod", "", "spec.zzz=1,spec.aaa=2", "field label not supported: spec.aaa"),
])
def test_unsupported_fields(kind, group, selector, message):
    with pytest.raises(errors.BadRequest) as e:
        parse_fields(selector, kind, group=group)
    assert e.value.message == message


def test_supported_fields_per_kind():
    node = {"metadata": {"name": "n"}, "spec": {"unschedulable": True}}
    assert labels.fields_match(parse_fields("spec.unschedulable=true", "Node"), node)
    assert labels.fields_match(parse_fields("spec.unschedulable=false", "Node"), {"metadata": {}, "spec": {}})
    secret = {"metadata": {"name": "s", "namespace": "d"}, "type": "Opaque"}
    assert labels.fields_match(parse_fields("type=Opaque", "Secret"), secret)
    svc = {"metadata": {"name": "s"}, "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.9"}}
    assert labels.fields_match(parse_fields("spec.type=ClusterIP,spec.clusterIP=10.0.0.9", "Service"), svc)
    ev = {"metadata": {"name": "e"}, "involvedObject": {"name": "web"}, "reportingComponent": "kubelet"}
    assert labels.fields_match(parse_fields("regarding.name=web,reportingController=kubelet", "Event",
                                                   group="events.k8s.io"), ev)
    assert labels.fields_match(parse_fields("metadata.name=x", "ConfigMap"), {"metadata": {"name": "x"}})


def test_exact_name():
    assert labels.exact_name("", "metadata.name=web") == "web"
    assert labels.exact_name("", "a=b,metadata.name==x") == "x"
    assert labels.exact_name("", "metadata.namespace=x") is None


def test_only_short_selectors_are_cached() -> None:
    """A hostile client's long selectors (a URL may be 1 MiB) are parsed, not kept."""
    long = ",".join(f"k{i}=v" for i in range(300))          # > 1,024 characters
    before = labels._parse_cached.cache_info().currsize
    assert len(labels.parse(long)) == 300
    assert labels._parse_cached.cache_info().currsize == before
    assert labels.parse("app=web") == labels.parse("app=web")
    assert labels._parse_cached.cache_info().hits >= 1
