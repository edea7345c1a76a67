"""The controllers' fast paths decide exactly as the plain code they replace.

label_matcher vs labels.matches, ActivePodsWithRanks.sort (facts read once) vs a sort by
less(), calculate_status vs is_pod_ready/is_pod_available, claim_pods' no-API-call shortcut
(claim_without_action) vs the claim rules, and get_pod_from_template sharing the spec only when asked.
"""
from __future__ import annotations

from functools import cmp_to_key
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kubeplane.api import labels, types
from kubeplane.api.types import apps_v1, core_v1, meta_v1
from kubeplane.controller import controller_utils as cu
from kubeplane.controller.controller_ref_manager import PodControllerRefManager
from kubeplane.controller.replicaset.claimed_pods import ClaimedPods
from kubeplane.controller.replicaset.replica_set import get_pods_to_delete
from kubeplane.controller.replicaset.replica_set_utils import calculate_status
from kubeplane.utils.clock import rfc3339

NOW = 1_700_000_000.0
KEYS = st.sampled_from(["a", "b", "c"])
VALUES = st.sampled_from(["1", "2"])
LABEL_SETS = st.none() | st.dictionaries(KEYS, VALUES, max_size=3)
REQUIREMENT = st.builds(lambda k, op, vs: labels.Requirement(k, op, tuple(vs)), KEYS,
                        st.sampled_from(["=", "in", "notin", "!=", "exists", "!"]),
                        st.lists(VALUES, min_size=1, max_size=2))
SELECTORS = st.none() | st.lists(REQUIREMENT, max_size=3).map(tuple)


@settings(max_examples=400, deadline=None)
@given(SELECTORS, LABEL_SETS)
def test_label_matcher_agrees_with_labels_matches(sel: Any, lbls: Any) -> None:
    want = False if sel is None else labels.matches(sel, lbls)
    assert cu.label_matcher(sel)(lbls) is want


def test_label_matcher_equality_pairs_are_a_subset_test() -> None:
    m = cu.label_matcher((labels.Requirement("app", "=", ("web",)), labels.Requirement("h", "=", ("5d",))))
    assert m({"app": "web", "h": "5d", "x": "1"})
    assert not m({"app": "web"})
    assert not m({"app": "web", "h": "6e"})
    assert not m(None)
    # one key required with two values matches nothing (no dict shortcut may merge them)
    both = cu.label_matcher((labels.Requirement("a", "=", ("1",)), labels.Requirement("a", "in", ("2",))))
    assert not both({"a": "1"}) and not both({"a": "2"})


def pod(i: int, *, node: str, phase: str, ready: bool | None, ready_at: float | None, created: float | None,
        restarts: int, cost: str | None) -> core_v1.Pod:
    status: dict[str, Any] = {"phase": phase, "containerStatuses": [
        {"name": "c", "ready": bool(ready), "restartCount": restarts, "image": "x", "imageID": ""}]}
    if ready is not None:
        cond: dict[str, Any] = {"type": "Ready", "status": "True" if ready else "False"}
        if ready_at is not None:
            cond["lastTransitionTime"] = rfc3339(ready_at)
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}, cond]
    meta: dict[str, Any] = {"name": f"p{i}", "namespace": "default", "uid": f"uid-{i:03d}",
                            "labels": {"app": "web"}}
    if created is not None:
        meta["creationTimestamp"] = rfc3339(created)
    if cost is not None:
        meta["annotations"] = {cu.POD_DELETION_COST: cost}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    return types.from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status},
                           core_v1.Pod)


TIMES = st.none() | st.sampled_from([NOW - 1, NOW - 100, NOW - 150, NOW - 7200, NOW - 10800, NOW + 5])
PODS = st.lists(st.builds(
    lambda node, phase, ready, ready_at, created, restarts, cost: dict(
        node=node, phase=phase, ready=ready, ready_at=ready_at, created=created, restarts=restarts, cost=cost),
    st.sampled_from(["", "n1", "n2"]), st.sampled_from(["Pending", "Unknown", "Running"]),
    st.none() | st.booleans(), TIMES, TIMES, st.integers(0, 2), st.none() | st.sampled_from(["-5", "0", "10", "x"])),
    max_size=12)


@settings(max_examples=200, deadline=None)
@given(PODS, st.lists(st.integers(0, 3), min_size=12, max_size=12), st.booleans(), st.booleans(),
       st.none() | st.just(NOW))
def test_ranked_sort_agrees_with_less(specs: list[dict[str, Any]], ranks: list[int], cost_gate: bool,
                                      log_gate: bool, now: float | None) -> None:
    pods = [pod(i, **s) for i, s in enumerate(specs)]
    ranked = cu.ActivePodsWithRanks(pods=list(pods), rank=ranks[:len(pods)], now=now,
                                    pod_deletion_cost=cost_gate, logarithmic_scale_down=log_gate)
    # the reference: sort indices with the pod-reading less()
    ref = cu.ActivePodsWithRanks(pods=list(pods), rank=ranks[:len(pods)], now=now,
                                 pod_deletion_cost=cost_gate, logarithmic_scale_down=log_gate)
    order = sorted(range(len(pods)), key=cmp_to_key(lambda a, b: -1 if ref.less(a, b) else (1 if ref.less(b, a) else 0)))
    ranked.sort()
    assert [p.metadata.name for p in ranked.pods] == [pods[k].metadata.name for k in order]
    assert ranked.rank == [ranks[k] for k in order]


@settings(max_examples=200, deadline=None)
@given(PODS, st.lists(st.integers(0, 3), min_size=12, max_size=12), st.integers(0, 13), st.booleans(),
       st.booleans(), st.none() | st.just(NOW))
def test_ranked_first_n_agrees_with_sort(specs: list[dict[str, Any]], ranks: list[int], n: int, cost_gate: bool,
                                         log_gate: bool, now: float | None) -> None:
    """first(n) (a cut on the first five rules, then all the rules on what is left) picks the
    same pods, in the same order, as the first n of sort()."""
    pods = [pod(i, **s) for i, s in enumerate(specs)]

    def ranked() -> cu.ActivePodsWithRanks:
        return cu.ActivePodsWithRanks(pods=list(pods), rank=ranks[:len(pods)], now=now,
                                      pod_deletion_cost=cost_gate, logarithmic_scale_down=log_gate)
    whole = ranked()
    whole.sort()
    assert [p.metadata.name for p in ranked().first(n)] == [p.metadata.name for p in whole.pods[:n]]


def _claimed_and_related(pods: list[Any], others: list[Any]) -> tuple[ClaimedPods, ClaimedPods]:
    """The ReplicaSet's ClaimedPods holding pods, and a related ReplicaSet's holding others."""
    related_rs = ClaimedPods((), lambda _labels: True, 0)
    for i, p in enumerate(others):
        related_rs.put_active(f"default/o{i}", p)
    claimed = ClaimedPods((), lambda _labels: True, 0)
    for p in pods:
        claimed.put_active(f"default/{p.metadata.name}", p)
    return claimed, related_rs


@settings(max_examples=200, deadline=None)
@given(PODS, PODS, st.integers(1, 12))
def test_claimed_pods_first_to_delete_agrees_with_get_pods_to_delete(specs: list[dict[str, Any]],
                                                                     others: list[dict[str, Any]], n: int) -> None:
    """The scale-down from ClaimedPods' kept counts (ranks from the related ReplicaSets' pods per
    node, the first rules kept per pod) picks what get_pods_to_delete picks from the pods."""
    pods = [pod(i, **s) for i, s in enumerate(specs)]
    assume(n < len(pods))
    claimed, related_rs = _claimed_and_related(pods, [pod(100 + i, **s) for i, s in enumerate(others)])
    related = [*claimed, *related_rs]
    want = get_pods_to_delete(list(claimed), related, n, NOW)
    got = claimed.first_to_delete(n, [claimed.on_node, related_rs.on_node], NOW)
    assert [p.metadata.name for p in got] == [p.metadata.name for p in want]


# Times sharing log2 age bands (NOW-100 and NOW-120 both band 36; NOW-5h and NOW-8h both 44):
# upstream's Less is not a consistent order on them (rank_key_func).
BANDED_TIMES = st.none() | st.sampled_from([NOW - 100, NOW - 120, NOW - 5 * 3600, NOW - 8 * 3600, NOW - 1])
BANDED_PODS = st.lists(st.builds(
    lambda node, phase, ready, ready_at, created, restarts, cost, uid: dict(
        node=node, phase=phase, ready=ready, ready_at=ready_at, created=created, restarts=restarts, cost=cost,
        uid=uid),
    st.sampled_from(["", "n1", "n2"]), st.sampled_from(["Pending", "Running"]), st.none() | st.booleans(),
    BANDED_TIMES, BANDED_TIMES, st.integers(0, 1), st.none() | st.sampled_from(["0", "10"]),
    st.sampled_from(["a", "b", "c", "d"])), max_size=12)


def banded_pod(i: int, uid: str, **spec: Any) -> core_v1.Pod:
    p = pod(i, **spec)
    p.metadata.uid = f"{uid}-{i:03d}"           # UID order unrelated to the pods' order
    return p


def _band(t: float) -> int:
    return cu.logarithmic_rank_diff(t, NOW + 1, NOW) - 1     # the band of t (NOW + 1 ranks -1)


@settings(max_examples=300, deadline=None)
@given(BANDED_PODS, st.lists(st.integers(0, 3), min_size=12, max_size=12))
def test_rank_key_orders_as_less_but_where_less_is_no_order(specs: list[dict[str, Any]], ranks: list[int]) -> None:
    """The sort key (rank_key_func) agrees with upstream's Less on every pair but two Ready
    pods with different ready times in one log2 band whose restarts or creation bands differ."""
    pods = [banded_pod(i, **s) for i, s in enumerate(specs)]
    ranked = cu.ActivePodsWithRanks(pods=pods, rank=ranks[:len(pods)], now=NOW)
    facts = [ranked._facts(i) for i in range(len(pods))]
    key = cu.rank_key_func(NOW, True)
    for i, fi in enumerate(facts):
        for j, fj in enumerate(facts):
            if not ranked.less(i, j):
                continue
            exception = (fi[1:6] == fj[1:6] and fi.ready and fi.ready_time is not None and fj.ready_time is not None
                         and fi.ready_time != fj.ready_time and _band(fi.ready_time) == _band(fj.ready_time)
                         and (fi.restarts != fj.restarts or cu.time_key_func(NOW, True)(fi.created)
                              != cu.time_key_func(NOW, True)(fj.created)))
            if not exception:
                assert key(fi) < key(fj), (specs[i], specs[j])


def test_rank_key_where_less_forms_a_cycle() -> None:
    """The one kind of pair where the key departs from Less: its answers form a cycle, and
    the key applies the restarts (rule 7) before the UID."""
    a = banded_pod(0, "c", node="n", phase="Running", ready=True, ready_at=NOW - 100, created=None, restarts=1, cost=None)
    b = banded_pod(1, "a", node="n", phase="Running", ready=True, ready_at=NOW - 100, created=None, restarts=0, cost=None)
    c = banded_pod(2, "b", node="n", phase="Running", ready=True, ready_at=NOW - 120, created=None, restarts=0, cost=None)
    ranked = cu.ActivePodsWithRanks(pods=[c, b, a], rank=[1, 1, 1], now=NOW)
    # Less: a before b (same ready time, more restarts), b before c and c before a (UIDs
    # a-001 < b-002 < c-000: ready times differ within one band)
    assert ranked.less(2, 1) and ranked.less(1, 0) and ranked.less(0, 2)
    ranked.sort()
    assert [p.metadata.name for p in ranked.pods] == ["p0", "p1", "p2"]


@settings(max_examples=300, deadline=None)
@given(BANDED_PODS, BANDED_PODS, st.integers(1, 12), st.lists(st.integers(0, 11), max_size=6))
def test_claimed_pods_first_to_delete_with_shared_bands(specs: list[dict[str, Any]], others: list[dict[str, Any]],
                                                        n: int, changed: list[int]) -> None:
    """first_to_delete (groups by node and first rules, facts cached per pod) picks what
    get_pods_to_delete picks, also after pods changed (removed and put back as new objects)."""
    pods = [banded_pod(i, **s) for i, s in enumerate(specs)]
    assume(n < len(pods))
    claimed, related_rs = _claimed_and_related(pods, [banded_pod(100 + i, **s) for i, s in enumerate(others)])
    claimed.first_to_delete(n, [claimed.on_node, related_rs.on_node], NOW)        # fills the facts
    for i in changed:
        if i < len(pods):
            s = specs[len(pods) - 1 - i]                # another pod's state, same name and UID
            fresh = banded_pod(i, **{**s, "uid": specs[i]["uid"]})
            claimed.remove(f"default/p{i}")
            claimed.put_active(f"default/p{i}", fresh)
    related = [*claimed, *related_rs]
    want = get_pods_to_delete(list(claimed), related, n, NOW)
    got = claimed.first_to_delete(n, [claimed.on_node, related_rs.on_node], NOW)
    assert [p.metadata.name for p in got] == [p.metadata.name for p in want]
    assert sum(len(keys) for keys in claimed.groups.values()) == len(claimed)


def rs(min_ready: int = 0) -> apps_v1.ReplicaSet:
    return types.from_dict({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "rs-uid", "generation": 1},
        "spec": {"replicas": 3, "minReadySeconds": min_ready, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}}, apps_v1.ReplicaSet)


@settings(max_examples=100, deadline=None)
@given(PODS, st.sampled_from([0, 10, 200]))
def test_calculate_status_counts_as_the_pod_helpers(specs: list[dict[str, Any]], min_ready: int) -> None:
    pods = [pod(i, **s) for i, s in enumerate(specs)]
    for i, p in enumerate(pods):
        if i % 2:
            p.metadata.labels = {"app": "web", "tier": "fe"}
    status = calculate_status(rs(min_ready), pods, [], None, NOW)
    assert status.replicas == len(pods)
    assert status.fully_labeled_replicas == sum(1 for i in range(len(pods)) if i % 2)
    assert status.ready_replicas == sum(1 for p in pods if cu.is_pod_ready(p))
    assert status.available_replicas == sum(1 for p in pods if cu.is_pod_available(p, min_ready, NOW))


def owned(name: str, uid: str | None, labels_: dict[str, str]) -> core_v1.Pod:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"u-{name}", "labels": labels_}
    if uid:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": uid,
                                    "controller": True}]
    return types.from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                            "spec": {"containers": [{"name": "c", "image": "x"}]}}, core_v1.Pod)


async def test_claim_pods_keeps_the_rules() -> None:
    """Mine+matching kept; someone else's skipped; mine not matching released; orphan matching adopted."""
    control = cu.FakePodControl()
    owner = rs()
    sel = cu.selector_from(owner.spec.selector)
    pods = [owned("mine", "rs-uid", {"app": "web"}), owned("other", "x-uid", {"app": "web"}),
            owned("stray", "rs-uid", {"app": "db"}), owned("orphan", None, {"app": "web"}),
            owned("foreign", None, {"app": "db"})]

    async def can_adopt() -> None:
        return None

    claimed = await PodControllerRefManager(control, owner, sel, cu.GroupVersionKind("apps", "v1", "ReplicaSet"),
                                            can_adopt).claim_pods(pods)
    assert [p.metadata.name for p in claimed] == ["mine", "orphan"]
    assert len(control.patches) == 2          # one release (stray), one adoption (orphan)
    assert b'"$patch":"delete"' in control.patches[0] and b'"controller":true' in control.patches[1]


def test_get_pod_from_template_copies_the_spec_unless_told() -> None:
    owner = rs()
    ref = cu.new_controller_ref(owner, cu.GroupVersionKind("apps", "v1", "ReplicaSet"))
    copied = cu.get_pod_from_template(owner.spec.template, owner, ref)
    shared = cu.get_pod_from_template(owner.spec.template, owner, ref, copy_spec=False)
    assert copied.spec == owner.spec.template.spec and copied.spec is not owner.spec.template.spec
    assert shared.spec is owner.spec.template.spec
    assert shared.metadata.labels is not owner.spec.template.metadata.labels
    assert shared.metadata.generate_name == "web-" and shared.metadata.owner_references == [ref]
    assert isinstance(shared.metadata, meta_v1.ObjectMeta)
