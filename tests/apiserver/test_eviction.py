"""pods/eviction as upstream's EvictionREST: the tables of eviction_test.go (TestEviction,
TestEvictionIgnorePDB's cases that need no mock store, TestEvictionDryRun, TestEvictionPDBStatus,
TestAddConditionAndDelete) run through the HTTP path, plus the edge cases drain meets."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.authentication.user import ANONYMOUS
from kubeplane.apiserver.registry import deletion
from kubeplane.apiserver.registry.core import eviction
from kubeplane.apiserver.registry.registry import REGISTRY

PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
POLICIES = [None, "IfHealthyBudget", "AlwaysAllow"]
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."


async def make_pod(api: Any, name: str, phase: str = "", ready: bool | None = None, labels: Any = None) -> Any:
    """A pod on node foo (so its delete is graceful), with the phase and Ready condition given."""
    r = await api.create(PODS, {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": name, "labels": {"a": "true"} if labels is None else labels},
                                "spec": {"nodeName": "foo", "containers": [{"name": "c", "image": "nginx"}]}})
    assert r.status == 201, r.json
    pod = r.json
    if phase or ready is not None:
        status = pod["status"]
        if phase:
            status["phase"] = phase
        if ready is not None:
            status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
        r = await api.call("PUT", f"{PODS}/{name}/status", body=pod)
        assert r.status == 200, r.json
        pod = r.json
    return pod


async def make_pdb(api: Any, name: str = "foo", selector: Any = None, policy: str | None = None,
                   observed: bool = True, **status: Any) -> Any:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"a": "true"}} if selector is None else selector}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    r = await api.create(PDBS, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                "metadata": {"name": name}, "spec": spec})
    assert r.status == 201, r.json
    pdb = r.json
    pdb["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0,
                     **({"observedGeneration": pdb["metadata"]["generation"]} if observed else {}), **status}
    r = await api.call("PUT", f"{PDBS}/{name}/status", body=pdb)
    assert r.status == 200, r.json
    return r.json


async def evict(api: Any, name: str, delete_options: Any = None, url_name: str | None = None,
                query: Any = None, api_version: str = "policy/v1") -> Any:
    body: dict[str, Any] = {"apiVersion": api_version, "kind": "Eviction",
                            "metadata": {"name": name, "namespace": "default"}}
    if delete_options is not None:
        body["deleteOptions"] = delete_options
    return await api.call("POST", f"{PODS}/{url_name or name}/eviction", query, body=body)


async def pod_state(api: Any, name: str) -> str:
    r = await api.get(f"{PODS}/{name}")
    if r.status == 404:
        return "deleted"
    return "terminating" if r.json["metadata"].get("deletionTimestamp") else "present"


def refused(r: Any, cause: str) -> None:
    assert r.status == 429, r.json
    assert r.json["reason"] == "TooManyRequests" and r.json["message"] == VIOLATES
    assert r.json["details"]["causes"] == [{"reason": "DisruptionBudget", "message": cause}]


GRACE_0 = {"gracePeriodSeconds": 0}


# --- TestEviction ----------------------------------------------------------------------------

@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("phase,ready,selector,allowed,expect", [
    pytest.param("Running", None, None, 0, "refused", id="matching pdbs with no disruptions allowed, pod running"),
    pytest.param("Pending", None, None, 0, "deleted", id="matching pdbs with no disruptions allowed, pod pending"),
    pytest.param("Succeeded", None, None, 0, "deleted", id="matching pdbs with no disruptions allowed, pod succeeded"),
    pytest.param("Failed", None, None, 0, "deleted", id="matching pdbs with no disruptions allowed, pod failed"),
    pytest.param("", None, None, 1, "deleted", id="matching pdbs with disruptions allowed"),
    pytest.param("", None, {"matchLabels": {"b": "true"}}, 0, "deleted", id="non-matching pdbs"),
    pytest.param("Running", None, {}, 0, "refused",
                 id="matching pdbs with no disruptions allowed, pod running, empty selector"),
])
async def test_eviction(api: Any, policy: str | None, phase: str, ready: Any, selector: Any, allowed: int,
                        expect: str) -> None:
    await make_pdb(api, selector=selector, policy=policy, disruptionsAllowed=allowed)
    await make_pod(api, "t1", phase, ready)
    r = await evict(api, "t1", GRACE_0)
    if expect == "refused" and policy != "AlwaysAllow":      # AlwaysAllow evicts an unready running pod
        refused(r, "The disruption budget foo needs 0 healthy pods and has 0 currently")
        assert await pod_state(api, "t1") == "present"
        return
    assert r.status == 201, r.json
    assert r.json == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    assert await pod_state(api, "t1") == "deleted"


async def test_bad_name_in_url(api: Any) -> None:
    await make_pdb(api, disruptionsAllowed=1)
    await make_pod(api, "t7")
    await make_pod(api, "t7bad-name")
    r = await evict(api, "t7", GRACE_0, url_name="t7bad-name")
    assert r.status == 400 and r.json["message"] == "name in URL does not match name in Eviction object"
    assert await pod_state(api, "t7") == await pod_state(api, "t7bad-name") == "present"


# --- TestEvictionIgnorePDB (the cases a real store can reproduce) ------------------------------

@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("ready,selector,status,expect", [
    pytest.param(True, None, {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2},
                 "needs 2 healthy pods and has 2 currently",
                 id="no disruptions allowed, pod running, pod healthy, unhealthy pod not ours"),
    pytest.param(True, None, {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 3}, "deleted",
                 id="disruptions allowed, pod running, pod healthy, healthy pod ours, deletes pod by honoring the PDB"),
    pytest.param(False, None, {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2}, "deleted",
                 id="no disruptions allowed, pod running, pod unhealthy, unhealthy pod ours"),
    pytest.param(False, None, {"disruptionsAllowed": 0}, "needs 0 healthy pods and has 0 currently",
                 id="no disruptions allowed, pod running, pod unhealthy, skips the PDB check only with AlwaysAllow"),
    pytest.param(True, {}, {"disruptionsAllowed": 0, "currentHealthy": 3, "desiredHealthy": 3},
                 "needs 3 healthy pods and has 3 currently",
                 id="no disruptions allowed, pod running, pod healthy, empty selector, pod not deleted"),
])
async def test_eviction_ignore_pdb(api: Any, policy: str | None, ready: bool, selector: Any, status: Any,
                                   expect: str) -> None:
    await make_pdb(api, selector=selector, policy=policy, **status)
    await make_pod(api, "t8", "Running", ready)
    r = await evict(api, "t8", GRACE_0)
    if expect == "deleted" or (policy == "AlwaysAllow" and not ready):
        assert r.status == 201, r.json
        assert await pod_state(api, "t8") == "deleted"
    else:
        refused(r, f"The disruption budget foo {expect}")
        assert await pod_state(api, "t8") == "present"


async def test_terminating_pod_is_deleted_without_the_budget(api: Any) -> None:
    """Upstream: "matching pdbs with no disruptions allowed, pod terminating"."""
    await make_pdb(api, disruptionsAllowed=0)
    await make_pod(api, "t6", "Running", True)
    assert (await api.call("DELETE", f"{PODS}/t6", body={"gracePeriodSeconds": 300})).status == 200
    r = await evict(api, "t6", {"gracePeriodSeconds": 300})
    assert r.status == 201, r.json
    assert await pod_state(api, "t6") == "terminating"


async def test_an_unhealthy_pod_pins_its_resource_version(api: Any) -> None:
    """The unready pod evicted without using the budget is deleted only at the revision it was
    judged at: the delete carries it as a precondition (a pod that became ready meanwhile would
    conflict, which the client sees as 429 `still being processed`)."""
    await make_pdb(api, disruptionsAllowed=0, currentHealthy=2, desiredHealthy=2)
    pod = await make_pod(api, "t9", "Running", False)
    seen: list[deletion.DeleteOptions] = []
    real = eviction.add_condition_and_delete_pod

    async def spy(api_: Any, ri: Any, ns: str, name: str, opts: deletion.DeleteOptions, user: Any) -> None:
        seen.append(opts)
        await real(api_, ri, ns, name, opts, user)
    eviction.add_condition_and_delete_pod = spy          # type: ignore[assignment]
    try:
        assert (await evict(api, "t9", GRACE_0)).status == 201
    finally:
        eviction.add_condition_and_delete_pod = real     # type: ignore[assignment]
    assert [o.precondition_rv for o in seen] == [pod["metadata"]["resourceVersion"]]


async def test_an_unhealthy_pod_that_changed_is_refused_as_being_processed(api: Any) -> None:
    """Upstream: "... unhealthy pod ours, resource version conflict" — the pinned delete
    conflicts and the client is told to retry."""
    await make_pdb(api, disruptionsAllowed=0, currentHealthy=2, desiredHealthy=2)
    await make_pod(api, "t9", "Running", False)
    pods = REGISTRY.lookup("", "v1", "pods")
    real = eviction.add_condition_and_delete_pod

    async def racing(api_: Any, ri: Any, ns: str, name: str, opts: deletion.DeleteOptions, user: Any) -> None:
        pod = (await api.get(f"{PODS}/t9")).json       # the pod changes before the delete
        pod["metadata"].setdefault("annotations", {})["changed"] = "yes"
        assert (await api.call("PUT", f"{PODS}/t9", body=pod)).status == 200
        await real(api_, ri, ns, name, opts, user)
    eviction.add_condition_and_delete_pod = racing       # type: ignore[assignment]
    try:
        r = await evict(api, "t9", GRACE_0)
    finally:
        eviction.add_condition_and_delete_pod = real     # type: ignore[assignment]
    refused(r, "The disruption budget foo is still being processed by the server.")
    assert ("retry-after", "10") in r.headers
    assert pods is not None and await pod_state(api, "t9") == "present"


# --- TestEvictionDryRun ----------------------------------------------------------------------------

@pytest.mark.parametrize("query,options,with_pdb", [
    pytest.param({"dryRun": "All"}, {}, False, id="just request-options"),
    pytest.param({}, {"dryRun": ["All"]}, False, id="just eviction-options"),
    pytest.param({"dryRun": "All"}, {"dryRun": ["All"]}, False, id="both options"),
    pytest.param({"dryRun": "All"}, {"dryRun": ["All"]}, True, id="with pdbs"),
])
async def test_eviction_dry_run(api: Any, query: Any, options: Any, with_pdb: bool) -> None:
    if with_pdb:
        before = await make_pdb(api, disruptionsAllowed=1)
    pod = await make_pod(api, "foo", "Running", True)
    r = await evict(api, "foo", options, query=query)
    assert r.status == 201, r.json
    after = (await api.get(f"{PODS}/foo")).json
    assert after == pod                                   # not deleted, no DisruptionTarget condition
    if with_pdb:
        assert (await api.get(f"{PDBS}/foo")).json == before


# --- TestEvictionPDBStatus -------------------------------------------------------------------------

@pytest.mark.parametrize("allowed,expected_allowed,expected_reason", [
    pytest.param(1, 0, "InsufficientPods", id="pdb status is updated after eviction"),
    pytest.param(3, 2, "SufficientPods", id="condition reason is only updated if AllowedDisruptions becomes 0"),
])
async def test_eviction_pdb_status(api: Any, clock: Any, allowed: int, expected_allowed: int,
                                   expected_reason: str) -> None:
    await make_pdb(api, disruptionsAllowed=allowed, conditions=[
        {"type": "DisruptionAllowed", "reason": "SufficientPods", "status": "True",
         "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}])
    for name in ("foo-1", "foo-2"):
        await make_pod(api, name, "Running")
    r = await evict(api, "foo-1", {})
    assert r.status == 201, r.json
    status = (await api.get(f"{PDBS}/foo")).json["status"]
    assert status["disruptionsAllowed"] == expected_allowed
    assert [c["reason"] for c in status["conditions"] if c["type"] == "DisruptionAllowed"] == [expected_reason]
    assert status["disruptedPods"] == {"foo-1": api.server.now()}
    # A graceful delete: the pod stays for its kubelet, marked as the eviction's target.
    pod = (await api.get(f"{PODS}/foo-1")).json
    assert pod["metadata"]["deletionTimestamp"]
    target = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert target == [{"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": api.server.now(), "reason": "EvictionByEvictionAPI",
                       "message": "Eviction API: evicting"}]


# --- TestAddConditionAndDelete -------------------------------------------------------------------

@pytest.mark.parametrize("initial,make_options,expect_err", [
    pytest.param(True, lambda p: {}, "", id="simple"),
    pytest.param(False, lambda p: {}, "not found", id="missing"),
    pytest.param(True, lambda p: {"precondition_uid": p["metadata"]["uid"]}, "", id="valid uid"),
    pytest.param(True, lambda p: {"precondition_uid": p["metadata"]["uid"] + "1"},
                 "The object might have been deleted and then recreated", id="invalid uid"),
    pytest.param(True, lambda p: {"precondition_rv": p["metadata"]["resourceVersion"]}, "",
                 id="valid resourceVersion"),
    pytest.param(True, lambda p: {"precondition_rv": p["metadata"]["resourceVersion"] + "1"},
                 "The object might have been modified", id="invalid resourceVersion"),
])
async def test_add_condition_and_delete(api: Any, initial: bool, make_options: Any, expect_err: str) -> None:
    pod = await make_pod(api, "foo") if initial else {"metadata": {}}
    opts = deletion.DeleteOptions(**make_options(pod))
    pods = REGISTRY.lookup("", "v1", "pods")
    assert pods is not None
    try:
        await eviction.add_condition_and_delete_pod(api.server, pods, "default", "foo", opts, ANONYMOUS)
    except Exception as e:
        assert expect_err and expect_err in str(e), e
    else:
        assert not expect_err
        assert await pod_state(api, "foo") == "terminating"


# --- edge cases ------------------------------------------------------------------------------------

async def test_no_budget_deletes_the_pod(api: Any) -> None:
    await make_pod(api, "p", "Running", True)
    r = await evict(api, "p")
    assert r.status == 201
    assert await pod_state(api, "p") == "terminating"      # graceful, as any delete of a pod on a node


async def test_missing_pod_is_404(api: Any) -> None:
    r = await evict(api, "nope")
    assert r.status == 404
    assert r.json["reason"] == "NotFound" and r.json["message"] == 'pods "nope" not found'


async def test_budget_not_yet_observed_is_429_with_retry_after(api: Any) -> None:
    await make_pdb(api, observed=False, disruptionsAllowed=1)
    await make_pod(api, "p", "Running", True)
    r = await evict(api, "p")
    refused(r, "The disruption budget foo is still being processed by the server.")
    assert r.json["details"]["retryAfterSeconds"] == 10 and ("retry-after", "10") in r.headers
    assert await pod_state(api, "p") == "present"


async def test_no_disruption_allowed_has_no_retry_after(api: Any) -> None:
    await make_pdb(api, disruptionsAllowed=0, currentHealthy=1, desiredHealthy=1)
    await make_pod(api, "p", "Running", True)
    r = await evict(api, "p")
    refused(r, "The disruption budget foo needs 1 healthy pods and has 1 currently")
    assert "retryAfterSeconds" not in r.json["details"]
    assert not [h for h in r.headers if h[0] == "retry-after"]


async def test_more_than_one_budget_is_500(api: Any) -> None:
    await make_pdb(api, "one", disruptionsAllowed=1)
    await make_pdb(api, "two", disruptionsAllowed=1)
    await make_pod(api, "p", "Running", True)
    r = await evict(api, "p")
    assert r.status == 500
    assert r.json == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": eviction.MULTIPLE_BUDGETS, "code": 500}
    assert await pod_state(api, "p") == "present"


async def test_negative_disruptions_allowed_is_forbidden(api: Any) -> None:
    await make_pdb(api, disruptionsAllowed=1)
    pdb = (await api.get(f"{PDBS}/foo")).json
    # Validation refuses a negative count; a stored one (an older server's) is still refused.
    key = "/registry/poddisruptionbudgets/default/foo"
    kv = await api.storage.get(key)
    await api.storage.update(key, {**pdb, "status": {**pdb["status"], "disruptionsAllowed": -1}}, kv.mod_revision)
    await make_pod(api, "p", "Running", True)
    r = await evict(api, "p")
    assert r.status == 403
    assert r.json["message"] == 'poddisruptionbudget.policy "foo" is forbidden: pdb disruptions allowed is negative'


async def test_v1beta1_eviction_is_accepted(api: Any) -> None:
    await make_pod(api, "p", "Pending")
    assert (await evict(api, "p", GRACE_0, api_version="policy/v1beta1")).status == 201
    assert await pod_state(api, "p") == "deleted"


async def test_non_matching_dry_run_options(api: Any) -> None:
    await make_pod(api, "p", "Pending")
    r = await evict(api, "p", {"dryRun": ["Other"]}, query={"dryRun": "All"})
    assert r.status == 500
    assert r.json["message"] == ("Internal error occurred: Non-matching dry-run options in request and content: "
                                 "[All] and [Other]")
    assert await pod_state(api, "p") == "present"


async def test_invalid_delete_options(api: Any) -> None:
    await make_pod(api, "p", "Pending")
    r = await evict(api, "p", {"propagationPolicy": "Sideways"})
    assert r.status == 422
    assert r.json["message"].startswith('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value')
    assert await pod_state(api, "p") == "present"


async def test_eviction_in_discovery(api: Any) -> None:
    """kubectl drain finds the eviction's group-version here (CheckEvictionSupport)."""
    r = await api.get("/api/v1")
    [sub] = [x for x in r.json["resources"] if x["name"] == "pods/eviction"]
    assert (sub["group"], sub["version"], sub["kind"], sub["verbs"]) == ("policy", "v1", "Eviction", ["create"])


async def test_too_many_unconfirmed_evictions_is_forbidden(api: Any) -> None:
    """More than MaxDisruptedPodSize (2,000) approvals the controller has not confirmed."""
    disrupted = {f"p{i}": "2023-11-14T22:13:20Z" for i in range(eviction.MAX_DISRUPTED_POD_SIZE + 1)}
    await make_pdb(api, disruptionsAllowed=5, disruptedPods=disrupted)
    await make_pod(api, "p", "Running", True)
    r = await evict(api, "p")
    assert r.status == 403
    assert r.json["message"] == ('poddisruptionbudget.policy "foo" is forbidden: DisruptedPods map too big - '
                                 "too many evictions not confirmed by PDB controller")
    assert await pod_state(api, "p") == "present"
