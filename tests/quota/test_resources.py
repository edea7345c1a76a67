"""ResourceList arithmetic: upstream's tables (staging/src/k8s.io/apiserver/pkg/quota/v1/
resources_test.go) as facts, plus prettyPrint (admission_test.go TestPrettyPrint)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.quota import resources as q


def rl(**kw: Any) -> q.ResourceList:
    return q.parse_list({k.replace("_", "."): v for k, v in kw.items()})


@pytest.mark.parametrize("a, b, expected", [
    ({}, {}, True),
    (rl(cpu="100m", memory="1Gi"), rl(cpu="100m", memory="1Gi"), True),
    (rl(cpu="200m", memory="1Gi"), rl(cpu="100m", memory="1Gi"), False),
    (rl(cpu="100m", memory="1Gi"), rl(cpu="100m", memory="1Gi", pods="1"), False),
    (rl(cpu="1000m"), rl(cpu="1"), True),
], ids=["isEqual", "isEqualWithKeys", "isNotEqualSameKeys", "isNotEqualDiffKeys", "numeric"])
def test_equals(a: q.ResourceList, b: q.ResourceList, expected: bool) -> None:
    assert q.equals(a, b) is expected


@pytest.mark.parametrize("a, b, expected, out", [
    ({}, {}, True, []),
    (rl(cpu="100m"), rl(cpu="100m"), True, []),
    (rl(cpu="100m"), rl(cpu="200m"), True, []),
    (rl(cpu="200m"), rl(cpu="100m"), False, ["cpu"]),
    (rl(cpu="2"), rl(memory="1Gi"), True, []),
], ids=["isEmpty", "isEqual", "isLessThan", "isGreaterThan", "namesOnlyInA"])
def test_less_than_or_equal(a: q.ResourceList, b: q.ResourceList, expected: bool, out: list[str]) -> None:
    assert q.less_than_or_equal(a, b) == (expected, out)


@pytest.mark.parametrize("a, b, expected", [
    ({}, {}, {}),
    (rl(cpu="100m"), {}, rl(cpu="100m")),
    (rl(cpu="100m"), rl(cpu="150m"), rl(cpu="150m")),
    (rl(cpu="150m"), rl(cpu="100m"), rl(cpu="150m")),
    (rl(cpu="100m"), rl(memory="1Gi"), rl(cpu="100m", memory="1Gi")),
], ids=["noKeys", "toEmpty", "matching", "matching(reverse)", "disjoint"])
def test_max(a: q.ResourceList, b: q.ResourceList, expected: q.ResourceList) -> None:
    assert q.equals(q.max_(a, b), expected)


@pytest.mark.parametrize("a, b, expected", [
    ({}, {}, {}),
    (rl(cpu="100m"), {}, rl(cpu="100m")),
    (rl(cpu="100m"), rl(cpu="100m"), rl(cpu="200m")),
], ids=["noKeys", "toEmpty", "matching"])
def test_add(a: q.ResourceList, b: q.ResourceList, expected: q.ResourceList) -> None:
    assert q.equals(q.add(a, b), expected)


@pytest.mark.parametrize("a, b, expected", [
    ({}, {}, {}),
    (rl(cpu="100m"), {}, rl(cpu="100m")),
    ({}, rl(cpu="100m"), rl(cpu="-100m")),
    (rl(cpu="200m"), rl(cpu="100m"), rl(cpu="100m")),
], ids=["noKeys", "value-empty", "empty-value", "value-value"])
def test_subtract(a: q.ResourceList, b: q.ResourceList, expected: q.ResourceList) -> None:
    assert q.equals(q.subtract(a, b), expected)


def test_subtract_with_non_negative_result() -> None:
    got = q.subtract_with_non_negative_result(rl(cpu="100m", memory="1Gi"), rl(cpu="200m", pods="1"))
    assert q.to_json(got) == {"cpu": "0", "memory": "1Gi", "pods": "0"}


def test_mask_names_contains_prefix() -> None:
    assert q.to_json(q.mask(rl(cpu="1", memory="1Gi", pods="2"), ["cpu", "pods", "services"])) == {"cpu": "1", "pods": "2"}
    assert sorted(q.resource_names(rl(cpu="1", memory="1Gi"))) == ["cpu", "memory"]
    assert q.contains(["cpu", "memory"], "cpu") and not q.contains(["memory"], "cpu")
    assert q.contains_prefix(["hugepages-"], "hugepages-2Mi") and not q.contains_prefix(["hugepages-"], "cpu")


@pytest.mark.parametrize("a, expected", [
    ({}, True), (rl(cpu="0", memory="0"), True), (rl(cpu="1", memory="0"), False),
], ids=["noKeys", "allZeros", "someZeros"])
def test_is_zero(a: q.ResourceList, expected: bool) -> None:
    assert q.is_zero(a) is expected


def test_remove_zeros_and_is_negative() -> None:
    assert q.to_json(q.remove_zeros(rl(cpu="0", memory="1Gi", pods="0"))) == {"memory": "1Gi"}
    assert sorted(q.is_negative(rl(cpu="-1", memory="1Gi", pods="-5"))) == ["cpu", "pods"]
    assert q.is_negative(rl(cpu="0")) == []


@pytest.mark.parametrize("a, b, expected", [
    ([], [], []),
    (["cpu"], [], []),
    (["cpu", "memory", "cpu"], ["memory", "cpu", "pods"], ["cpu", "memory"]),
    (["pods", "cpu"], ["cpu", "pods"], ["cpu", "pods"]),
], ids=["empty", "one-empty", "dedup", "sorted"])
def test_intersection(a: list[str], b: list[str], expected: list[str]) -> None:
    assert q.intersection(a, b) == expected


@pytest.mark.parametrize("a, b, expected", [
    ([], [], []),
    (["cpu", "memory"], [], ["cpu", "memory"]),
    (["pods", "cpu", "memory", "cpu"], ["memory"], ["cpu", "pods"]),
], ids=["empty", "nothing-removed", "dedup-sorted"])
def test_difference(a: list[str], b: list[str], expected: list[str]) -> None:
    assert q.difference(a, b) == expected


@pytest.mark.parametrize("given, expected", [
    ({"cpu": "100m"}, "cpu=100m"),
    ({"pods": "10", "services": "10", "replicationcontrollers": "10", "services.nodeports": "10",
      "requests.cpu": "100m", "requests.memory": "100Mi", "limits.cpu": "100m", "limits.memory": "100Mi"},
     "limits.cpu=100m,limits.memory=100Mi,pods=10,replicationcontrollers=10,requests.cpu=100m,"
     "requests.memory=100Mi,services=10,services.nodeports=10"),
])
def test_pretty_print(given: dict[str, str], expected: str) -> None:
    assert q.pretty_print(q.parse_list(given)) == expected
