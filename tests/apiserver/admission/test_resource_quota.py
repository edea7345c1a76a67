"""The ResourceQuota admission plugin, through the API server (create runs the chain today).

Quotas are written straight into storage under /registry/resourcequotas/<ns>/<name> with their
status.hard/used, as upstream's admission tests hand quotas to the plugin. Cases and messages
from upstream's plugin/pkg/admission/resourcequota/admission_test.go.
"""
from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from kubeplane import storage as st
from kubeplane.apiserver.admission.interface import Attributes, Operation
from kubeplane.apiserver.admission.plugins.resource_quota import QuotaState, check_request
from kubeplane.api import errors
from kubeplane.quota import resources as q
from kubeplane.quota.evaluator.core.services import ServiceEvaluator

KEY = "/registry/resourcequotas/default/quota"


def quota(hard: dict[str, str], used: dict[str, str] | None, name: str = "quota", ns: str = "default",
          **spec: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"hard": hard}
    if used is not None:
        status["used"] = used
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
            "spec": {"hard": hard, **spec}, "status": status}


async def put(api: Any, *quotas: dict[str, Any]) -> None:
    for qt in quotas:
        await api.storage.create(f"/registry/resourcequotas/{qt['metadata']['namespace']}/{qt['metadata']['name']}", qt)


async def used(api: Any, key: str = KEY) -> dict[str, str]:
    kv = await api.storage.get(key)
    return dict(kv.obj["status"]["used"])


def rpod(api: Any, name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
         **spec: Any) -> dict[str, Any]:
    p = api.pod(name, **spec)
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    p["spec"]["containers"][0]["resources"] = res
    return p


COMPUTE = {"cpu": "3", "memory": "100Gi", "pods": "5"}


async def test_admit_below_quota_limit(api: Any) -> None:
    """TestAdmitBelowQuotaLimit: the pod is stored and the quota charged."""
    await put(api, quota(COMPUTE, {"cpu": "1", "memory": "50Gi", "pods": "3"}))
    r = await api.create(api.PODS, rpod(api, "allowed-pod", {"cpu": "100m", "memory": "2Gi"}))
    assert r.status == 201, r.json
    assert await used(api) == {"cpu": "1100m", "memory": "52Gi", "pods": "4"}


async def test_admit_exceed_quota_limit(api: Any) -> None:
    """TestAdmitExceedQuotaLimit, with upstream's message; nothing is stored or charged."""
    await put(api, quota(COMPUTE, {"cpu": "1", "memory": "50Gi", "pods": "3"}))
    r = await api.create(api.PODS, rpod(api, "not-allowed-pod", {"cpu": "3", "memory": "2Gi"}))
    assert r.status == 403, r.json
    assert r.json["reason"] == "Forbidden"
    assert r.json["message"] == ('pods "not-allowed-pod" is forbidden: exceeded quota: quota, requested: cpu=3, '
                                 'used: cpu=1, limited: cpu=3')
    assert (await api.get(f"{api.PODS}/not-allowed-pod")).status == 404
    assert await used(api) == {"cpu": "1", "memory": "50Gi", "pods": "3"}


async def test_exceeding_several_resources_lists_them_sorted(api: Any) -> None:
    await put(api, quota({"requests.cpu": "1", "requests.memory": "1Gi", "pods": "10"},
                         {"requests.cpu": "800m", "requests.memory": "1000Mi", "pods": "1"}))
    r = await api.create(api.PODS, rpod(api, "big", {"cpu": "500m", "memory": "100Mi"}))
    assert r.status == 403
    assert r.json["message"] == ('pods "big" is forbidden: exceeded quota: quota, requested: '
                                 'requests.cpu=500m,requests.memory=100Mi, used: requests.cpu=800m,'
                                 'requests.memory=1000Mi, limited: requests.cpu=1,requests.memory=1Gi')


async def test_pods_count_quota_and_generate_name(api: Any) -> None:
    await put(api, quota({"pods": "2"}, {"pods": "2"}))
    p = api.pod("")
    p["metadata"]["generateName"] = "web-"
    r = await api.create(api.PODS, p)
    assert r.status == 403
    # Upstream names the object by its generated name: validating admission runs after BeforeCreate.
    assert re.fullmatch(r'pods "web-[a-z0-9]{5}" is forbidden: exceeded quota: quota, requested: pods=1, '
                        r'used: pods=2, limited: pods=2', r.json["message"]), r.json["message"]


async def test_admit_enforce_quota_constraints(api: Any) -> None:
    """TestAdmitEnforceQuotaConstraints: a cpu/memory quota needs every container to set them."""
    await put(api, quota({"requests.cpu": "1", "requests.memory": "1Gi", "limits.cpu": "2", "limits.memory": "2Gi"},
                         {"requests.cpu": "0", "requests.memory": "0", "limits.cpu": "0", "limits.memory": "0"}))
    p = api.pod("nginx")
    p["spec"]["containers"][0]["name"] = "nginx"
    r = await api.create(api.PODS, p)
    assert r.status == 403
    assert r.json["message"] == ('pods "nginx" is forbidden: failed quota: quota: must specify limits.cpu for: nginx; '
                                 'limits.memory for: nginx; requests.cpu for: nginx; requests.memory for: nginx')
    r = await api.create(api.PODS, rpod(api, "half", {"cpu": "100m", "memory": "1Gi"}, {"cpu": "200m"}))
    assert r.json["message"] == 'pods "half" is forbidden: failed quota: quota: must specify limits.memory for: c'


async def test_status_unknown_for_quota(api: Any) -> None:
    """A quota the controller has not computed yet refuses what it tracks (hasUsageStats)."""
    await put(api, quota({"pods": "5", "requests.cpu": "1"}, {"pods": "1"}))
    r = await api.create(api.PODS, rpod(api, "p", {"cpu": "100m"}))
    assert r.status == 403
    assert r.json["message"] == 'pods "p" is forbidden: status unknown for quota: quota, resources: pods,requests.cpu'


async def test_quota_without_status_hard_tracks_nothing(api: Any) -> None:
    """Until the controller copies spec.hard to status.hard, the quota matches nothing."""
    qt = quota({"pods": "0"}, None)
    del qt["status"]
    await put(api, qt)
    assert (await api.create(api.PODS, api.pod("p"))).status == 201


async def test_admit_dry_run_checks_but_does_not_charge(api: Any) -> None:
    await put(api, quota({"pods": "1"}, {"pods": "0"}))
    r = await api.create(api.PODS, api.pod("p"), {"dryRun": "All"})
    assert r.status == 201
    assert await used(api) == {"pods": "0"}
    await put(api, quota({"pods": "1"}, {"pods": "1"}, name="full"))
    r = await api.create(api.PODS, api.pod("p"), {"dryRun": "All"})
    assert r.status == 403 and "exceeded quota: full" in r.json["message"]


async def test_terminating_and_best_effort_scopes(api: Any) -> None:
    """TestAdmitBelowTerminatingQuotaLimit / TestAdmitBelowBestEffortQuotaLimit: only the quotas
    whose scopes the pod is in are charged."""
    await put(api,
              quota({"pods": "5"}, {"pods": "0"}, name="terminating", scopes=["Terminating"]),
              quota({"pods": "5"}, {"pods": "0"}, name="not-terminating", scopes=["NotTerminating"]),
              quota({"pods": "5"}, {"pods": "0"}, name="best-effort", scopes=["BestEffort"]),
              quota({"pods": "5"}, {"pods": "0"}, name="not-best-effort", scopes=["NotBestEffort"]))
    assert (await api.create(api.PODS, rpod(api, "t", {"cpu": "1"}, activeDeadlineSeconds=60))).status == 201
    assert (await api.create(api.PODS, api.pod("b"))).status == 201
    got = {n: (await used(api, f"/registry/resourcequotas/default/{n}"))["pods"]
           for n in ("terminating", "not-terminating", "best-effort", "not-best-effort")}
    assert got == {"terminating": "1", "not-terminating": "1", "best-effort": "1", "not-best-effort": "1"}


async def test_priority_class_scope_selector(api: Any) -> None:
    sel = {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}
    await put(api, quota({"pods": "1"}, {"pods": "1"}, scopeSelector=sel))
    await api.storage.create("/registry/priorityclasses/high", {      # the Priority plugin resolves it
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000})
    assert (await api.create(api.PODS, api.pod("low"))).status == 201
    r = await api.create(api.PODS, api.pod("high", priorityClassName="high"))
    assert r.status == 403 and "exceeded quota: quota, requested: pods=1" in r.json["message"]


async def test_object_count_quota(api: Any) -> None:
    await put(api, quota({"count/configmaps": "1", "configmaps": "5"}, {"count/configmaps": "1", "configmaps": "1"}))
    r = await api.create("/api/v1/namespaces/default/configmaps", api.configmap("b"))
    assert r.status == 403
    assert r.json["message"] == ('configmaps "b" is forbidden: exceeded quota: quota, requested: count/configmaps=1, '
                                 'used: count/configmaps=1, limited: count/configmaps=1')


async def test_count_of_any_resource(api: Any) -> None:
    await put(api, quota({"count/deployments.apps": "1"}, {"count/deployments.apps": "0"}))
    assert (await api.create(api.DEPLOYS, api.deployment("a"))).status == 201
    assert await used(api) == {"count/deployments.apps": "1"}
    r = await api.create(api.DEPLOYS, api.deployment("b"))
    assert r.status == 403
    assert r.json["message"].startswith('deployments.apps "b" is forbidden: exceeded quota: quota, requested: '
                                        'count/deployments.apps=1')


async def test_other_namespaces_and_ignored_resources_are_not_charged(api: Any) -> None:
    await put(api, quota({"pods": "0", "count/events": "0"}, {"pods": "0", "count/events": "0"}, ns="other"))
    assert (await api.create(api.PODS, api.pod("p"))).status == 201
    await put(api, quota({"count/events": "0"}, {"count/events": "0"}))
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"},
          "reason": "R", "message": "m", "type": "Normal"}
    assert (await api.create("/api/v1/namespaces/default/events", ev)).status == 201


async def test_no_quota_means_no_list(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hot path: a namespace without quotas never lists them (the plugin's index of which
    namespaces have quotas lists them all once, then follows the watch)."""
    listed: list[str] = []
    real = api.storage.list

    async def spy(prefix: str) -> Any:
        listed.append(prefix)
        return await real(prefix)
    monkeypatch.setattr(api.storage, "list", spy)
    await put(api, quota({"pods": "5"}, {"pods": "0"}, ns="other"))
    for i in range(3):
        assert (await api.create(api.PODS, api.pod(f"p{i}"))).status == 201
    # at most the index's one list (none if an earlier write in a namespace made it)
    assert [p for p in listed if p.startswith("/registry/resourcequotas/")] in ([], ["/registry/resourcequotas/"])


async def test_back_to_back_creates_cannot_both_pass(api: Any) -> None:
    await put(api, quota({"pods": "1"}, {"pods": "0"}))
    rs = await asyncio.gather(*(api.create(api.PODS, api.pod(f"p{i}")) for i in range(5)))
    assert sorted(r.status for r in rs) == [201, 403, 403, 403, 403]
    assert await used(api) == {"pods": "1"}


async def test_conflict_rereads_the_quota_and_rechecks(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A status write racing ours (the controller recalculating) makes ours conflict: the
    plugin re-reads the quota and checks again against the new usage."""
    await put(api, quota({"pods": "3"}, {"pods": "0"}))
    real = api.storage.update
    raced: list[int] = []

    async def racing_update(key: str, obj: Any, expected_revision: int | None = None) -> Any:
        if key == KEY and not raced:
            kv = await api.storage.get(KEY)
            raced.append(kv.mod_revision)
            await real(KEY, {**kv.obj, "status": {**kv.obj["status"], "used": {"pods": "2"}}})
        return await real(key, obj, expected_revision)
    monkeypatch.setattr(api.storage, "update", racing_update)
    assert (await api.create(api.PODS, api.pod("p"))).status == 201
    assert raced and await used(api) == {"pods": "3"}
    r = await api.create(api.PODS, api.pod("q"))
    assert r.status == 403 and "used: pods=3" in r.json["message"]


async def test_conflicts_without_end_answer_409(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    await put(api, quota({"pods": "3"}, {"pods": "0"}))
    real = api.storage.update

    async def always_stale(key: str, obj: Any, expected_revision: int | None = None) -> Any:
        if key == KEY:
            raise st.RevisionMismatch(key)
        return await real(key, obj, expected_revision)
    monkeypatch.setattr(api.storage, "update", always_stale)
    r = await api.create(api.PODS, api.pod("p"))
    assert r.status == 409
    assert r.json["message"] == ('Operation cannot be fulfilled on resourcequotas "quota": the object has been '
                                 'modified; please apply your changes to the latest version and try again')
    assert (await api.get(f"{api.PODS}/p")).status == 404


async def test_malformed_stored_quota_is_ignored(api: Any) -> None:
    await put(api, quota({"pods": "lots"}, {"pods": "0"}))
    assert (await api.create(api.PODS, api.pod("p"))).status == 201


# --- updates, checked directly (the update path runs the chain once the registry work lands) ---

def state(obj: dict[str, Any]) -> QuotaState:
    kv = st.KeyValue("/k", b"", obj, 1, 1)
    s = QuotaState.from_kv(kv)
    assert s is not None
    return s


def svc(kind: str, rv: str = "5") -> dict[str, Any]:
    return {"metadata": {"name": "s", "namespace": "default", "resourceVersion": rv},
            "spec": {"type": kind, "ports": [{"port": 80}]}}


def update(obj: Any, old: Any) -> Attributes:
    return Attributes(Operation.UPDATE, "", "v1", "services", "Service", "default", "s", obj, old)


def test_update_charges_the_growth_only() -> None:
    """TestAdmitHandlesOldObjects: ClusterIP -> NodePort adds a node port, not a service."""
    s = state(quota({"services": "10", "services.nodeports": "10"}, {"services": "1", "services.nodeports": "0"}))
    check_request([s], update(svc("NodePort"), svc("ClusterIP")), ServiceEvaluator())
    assert s.new_used is not None and {k: str(v) for k, v in s.new_used.items()} == {"services": "1",
                                                                                  "services.nodeports": "1"}


def test_update_within_usage_changes_nothing() -> None:
    s = state(quota({"services": "1"}, {"services": "1"}))
    check_request([s], update(svc("NodePort"), svc("ClusterIP")), ServiceEvaluator())
    assert s.new_used is not None and q.equals(s.new_used, s.used)      # nothing to write


def test_update_over_quota_is_refused() -> None:
    s = state(quota({"services.nodeports": "0"}, {"services.nodeports": "0"}))
    with pytest.raises(errors.StatusError) as e:
        check_request([s], update(svc("NodePort"), svc("ClusterIP")), ServiceEvaluator())
    assert e.value.message == ('services "s" is forbidden: exceeded quota: quota, requested: services.nodeports=1, '
                               'used: services.nodeports=0, limited: services.nodeports=0')


def test_update_without_old_object_is_refused() -> None:
    s = state(quota({"services": "1"}, {"services": "0"}))
    with pytest.raises(errors.StatusError) as e:
        check_request([s], update(svc("NodePort"), None), ServiceEvaluator())
    assert e.value.code == 403 and e.value.message.endswith(
        "unable to get previous usage since prior version of object was not found")


def test_create_on_update_pays_in_full() -> None:
    s = state(quota({"services": "2"}, {"services": "1"}))
    check_request([s], update(svc("ClusterIP"), svc("ClusterIP", rv="")), ServiceEvaluator())
    assert s.new_used is not None and str(s.new_used["services"]) == "2"


# --- oracle: what admission charged equals the controller's full recalculation ---------------

def _variants(api: Any) -> list[dict[str, Any]]:
    """Pods of every shape the evaluator sums; each container of a non-best-effort pod sets cpu
    and memory (a cpu/memory quota requires it)."""
    def c(name: str, req: dict[str, str] | None = None, lim: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
        res = {"requests": {"cpu": "10m", "memory": "8Mi", **(req or {})},
               "limits": {"cpu": "4", "memory": "4Gi", **(lim or {})}}
        return {"name": name, "image": "nginx", "resources": res, **kw}

    def p(name: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
        obj = api.pod(name)
        obj["spec"].update(containers=containers, **spec)
        return obj
    return [
        api.pod("best-effort"),
        p("one", [c("a", {"cpu": "100m", "memory": "64Mi"}, {"cpu": "200m", "memory": "128Mi"})]),
        p("two", [c("a", {"cpu": "1"}, {"cpu": "1"}), c("b", {"cpu": "250m", "memory": "1G"}, {"memory": "2G"})]),
        p("init-max", [c("a", {"cpu": "100m"})], initContainers=[c("i", {"cpu": "2", "memory": "1Gi"}, {"cpu": "2",
                                                                                                      "memory": "1Gi"})]),
        p("sidecar", [c("a", {"cpu": "500m"}, {"cpu": "500m"})],
          initContainers=[c("s", {"cpu": "250m"}, {"cpu": "250m"}, restartPolicy="Always"),
                          c("i", {"cpu": "1"}, {"cpu": "1"})]),
        p("extended", [c("a", {"example.com/gpu": "2"}, {"example.com/gpu": "2"})]),
        p("ephemeral", [c("a", {"ephemeral-storage": "1Gi"}, {"ephemeral-storage": "2Gi"})]),
        p("hugepages", [c("a", {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "64Mi"},
                          {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "64Mi"})]),
        p("terminating", [c("a", {"cpu": "300m"}, {"cpu": "300m"})], activeDeadlineSeconds=30),
        p("decimal", [c("a", {"cpu": "0.5", "memory": "500M"}, {"cpu": "0.5", "memory": "500M"})]),
    ]


QUOTAS = {"compute": ["NotBestEffort"], "long-running": ["NotTerminating", "NotBestEffort"], "best-effort": ["BestEffort"]}


async def test_admission_charges_equal_a_full_recalculation(api: Any) -> None:
    from kubeplane.quota.evaluator.core import new_registry
    from kubeplane.quota.usage import calculate_usage

    compute = {name: "1000" for name in ("pods", "count/pods", "requests.cpu", "limits.cpu", "cpu",
                                         "requests.example.com/gpu")}
    compute |= {name: "1Ti" for name in ("requests.memory", "limits.memory", "memory", "requests.ephemeral-storage",
                                         "limits.ephemeral-storage", "requests.hugepages-2Mi", "hugepages-2Mi")}
    hards = {"compute": compute, "long-running": compute, "best-effort": {"pods": "10", "count/pods": "10"}}
    await put(api, *(quota(hards[n], {k: "0" for k in hards[n]}, name=n, scopes=scopes) for n, scopes in QUOTAS.items()))
    for obj in _variants(api):
        r = await api.create(api.PODS, obj)
        assert r.status == 201, r.json["message"]

    async def list_items(group: str, resource: str, ns: str) -> list[dict[str, Any]]:
        kvs, _ = await api.storage.list(f"/registry/{resource}/{ns}/")
        return [kv.obj for kv in kvs]

    for name, scopes in QUOTAS.items():
        expected, errs = await calculate_usage("default", scopes, q.parse_list(hards[name]), new_registry(api.clock),
                                               None, list_items)
        charged = q.parse_list(await used(api, f"/registry/resourcequotas/default/{name}"))
        assert not errs
        assert q.equals(charged, expected), (name, q.to_json(charged), q.to_json(expected))
    assert (await used(api, "/registry/resourcequotas/default/compute"))["pods"] == "9"
    assert (await used(api, "/registry/resourcequotas/default/long-running"))["pods"] == "8"
    assert (await used(api, "/registry/resourcequotas/default/best-effort"))["pods"] == "1"
