"""The Deployment controller under the real kubectl: upstream's e2e list (test/e2e/apps/deployment.go,
spec/deployment-behaviour.md §14) and the integration scenarios of §15 that need no network.

Two clusters per module: `bare` (`--nodes 0`: pods become Ready only when a test marks them
through /status, as upstream's integration tests do, for exact control over a rollout) and
`kube` (`--nodes 2`: the simulated kubelets make pods Ready by themselves).
"""
from __future__ import annotations

import json
import random
import re
from typing import Any, Iterator

import pytest

from .cluster import Cluster, running
from .rollout_helpers import (
    CHANGE_CAUSE, POD_TEMPLATE_HASH, REVISION, REVISION_HISTORY, Api, Recorder, annotations, complete, condition,
    deployment, eventually, is_ready, owner_name, rolling, rs_by_revision,
)

# kubectl rollout status lines (polymorphichelpers/rollout_status.go), spec §12.1.
STATUS_LINES = [
    r'Waiting for deployment spec update to be observed\.\.\.',
    r'Waiting for deployment "{d}" rollout to finish: \d+ out of \d+ new replicas have been updated\.\.\.',
    r'Waiting for deployment "{d}" rollout to finish: \d+ old replicas are pending termination\.\.\.',
    r'Waiting for deployment "{d}" rollout to finish: \d+ of \d+ updated replicas are available\.\.\.',
    r'deployment "{d}" successfully rolled out',
]


def assert_status_lines(out: str, d: str) -> None:
    pats = [re.compile(p.format(d=re.escape(d))) for p in STATUS_LINES]
    lines = out.strip().splitlines()
    assert lines and lines[-1] == f'deployment "{d}" successfully rolled out', out
    for line in lines:
        assert any(p.fullmatch(line) for p in pats), f"unexpected rollout status line: {line!r}"


# --- fixtures -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bare() -> Iterator[Cluster]:
    yield from running(nodes=0)


@pytest.fixture(scope="module")
def kube() -> Iterator[Cluster]:
    yield from running(nodes=2)


@pytest.fixture(scope="module")
def bare_api(bare: Cluster) -> Iterator[Api]:
    api = Api(bare)
    yield api
    api.close()


@pytest.fixture(scope="module")
def kube_api(kube: Cluster) -> Iterator[Api]:
    api = Api(kube)
    yield api
    api.close()


def _ns(c: Cluster, request: pytest.FixtureRequest) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:50].strip("-")
    c.kubectl("create", "namespace", name)
    return name


@pytest.fixture
def bns(bare: Cluster, request: pytest.FixtureRequest) -> str:
    return _ns(bare, request)


@pytest.fixture
def kns(kube: Cluster, request: pytest.FixtureRequest) -> str:
    return _ns(kube, request)


def get_d(c: Cluster, ns: str, name: str) -> dict[str, Any]:
    return c.get_json("deployment", name, "-n", ns)


def wait_complete(c: Cluster, ns: str, name: str, timeout: float = 30) -> dict[str, Any]:
    return eventually(lambda: (lambda d: complete(d) and d)(get_d(c, ns, name)), f"deployment {name} complete",
                      timeout)


def replica_sets(api: Api, ns: str) -> list[dict[str, Any]]:
    return api.list(ns, "replicasets")


def image_of(obj: dict[str, Any]) -> str:
    return obj["spec"]["template"]["spec"]["containers"][0]["image"]


# --- new deployment and kubectl rollout status -------------------------------------------------------------


def test_new_deployment_and_rollout_status_messages(bare: Cluster, bare_api: Api, bns: str) -> None:
    out = bare.kubectl("create", "deployment", "web", "--image=nginx:1", "--replicas=2", "-n", bns).stdout
    assert out.strip() == "deployment.apps/web created"
    # Pods are not Ready: --watch=false prints the current waiting line and exits 0.
    line = eventually(lambda: (lambda o: "updated replicas are available" in o and o)(
        bare.kubectl("rollout", "status", "deployment/web", "-n", bns, "--watch=false").stdout),
        "the pods to be created")
    assert line.strip() == 'Waiting for deployment "web" rollout to finish: 0 of 2 updated replicas are available...'
    res = bare.kubectl("rollout", "status", "deployment/web", "-n", bns, "--revision=2", check=False)
    assert res.returncode == 1
    assert res.stderr.strip() == "error: desired revision (2) is different from the running revision (1)"
    res = bare.kubectl("rollout", "status", "deployment/web", "-n", bns, "--timeout=1s", check=False)
    assert res.returncode == 1 and "error: timed out waiting for the condition" in res.stderr
    bare_api.mark_all_ready_until(bns, lambda: complete(get_d(bare, bns, "web")), "web complete")
    res = bare.kubectl("rollout", "status", "deployment/web", "-n", bns, "--timeout=30s")
    assert_status_lines(res.stdout, "web")
    # TestNewDeployment: one RS, revision 1, the hash identical in name, labels, selector, template, pods.
    d = get_d(bare, bns, "web")
    assert annotations(d)[REVISION] == "1"
    [rs] = replica_sets(bare_api, bns)
    h = rs["metadata"]["labels"][POD_TEMPLATE_HASH]
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["spec"]["selector"]["matchLabels"][POD_TEMPLATE_HASH] == h
    assert rs["spec"]["template"]["metadata"]["labels"][POD_TEMPLATE_HASH] == h
    assert annotations(rs)[REVISION] == "1" and annotations(rs)["deployment.kubernetes.io/desired-replicas"] == "2"
    assert annotations(rs)["deployment.kubernetes.io/max-replicas"] == "3"      # 2 + ceil(25% of 2)
    assert owner_name(rs) == "web"
    pods = bare_api.list(bns, "pods")
    assert len(pods) == 2 and all(p["metadata"]["labels"][POD_TEMPLATE_HASH] == h for p in pods)
    assert [condition(d, "Available")["reason"], condition(d, "Progressing")["reason"]] == \
        ["MinimumReplicasAvailable", "NewReplicaSetAvailable"]
    assert condition(d, "Progressing")["message"] == f'ReplicaSet "web-{h}" has successfully progressed.'


# --- rolling update: the surge/unavailable arithmetic at every step --------------------------------------------


def check_rolling_invariants(rec: Recorder, replicas: int, max_surge: int, max_unavailable: int) -> int:
    """Replay the recorded events; at every step: Σ RS spec.replicas and the number of
    active pods stay <= replicas + maxSurge, Ready pods >= replicas - maxUnavailable.
    Returns the number of steps checked."""
    steps = 0
    for rv, st in rec.replay():
        total_spec = sum(rs["spec"]["replicas"] for rs in st["replicasets"].values())
        active = [p for p in st["pods"].values() if not p["metadata"].get("deletionTimestamp")]
        ready = [p for p in active if is_ready(p)]
        assert total_spec <= replicas + max_surge, f"rv {rv}: RS sizes sum to {total_spec}"
        assert len(active) <= replicas + max_surge, f"rv {rv}: {len(active)} pods"
        assert len(ready) >= replicas - max_unavailable, f"rv {rv}: only {len(ready)} pods Ready"
        steps += 1
    return steps


def roll_marking_one_at_a_time(c: Cluster, api: Api, ns: str, name: str) -> None:
    """Mark one not-Ready pod Ready at a time, waiting for the controller to react in between."""
    def step() -> bool:
        d = get_d(c, ns, name)
        if complete(d) and annotations(d).get(REVISION) == want_revision:
            return True
        unready = api.unready_pods(ns)
        if unready:
            api.mark_ready(ns, unready[0]["metadata"]["name"])
        return False
    want_revision = annotations(get_d(c, ns, name)).get(REVISION)
    eventually(step, f"rollout of {name} to complete")


def test_rolling_update_keeps_surge_and_unavailable_limits(bare: Cluster, bare_api: Api, bns: str) -> None:
    bare.apply_yaml(deployment("roll", 10, "nginx:1", strategy=rolling(3, 2)), "-n", bns)
    bare_api.mark_all_ready_until(bns, lambda: complete(get_d(bare, bns, "roll")), "roll complete")
    with Recorder(bare, bns) as rec:
        bare.kubectl("set", "image", "deployment/roll", "c=nginx:2", "-n", bns)
        eventually(lambda: annotations(get_d(bare, bns, "roll")).get(REVISION) == "2", "revision 2")
        roll_marking_one_at_a_time(bare, bare_api, bns, "roll")
        eventually(lambda: len(bare_api.list(bns, "pods")) == 10, "old pods gone")
    assert check_rolling_invariants(rec, 10, 3, 2) > 20
    by_rev = rs_by_revision(replica_sets(bare_api, bns))
    assert by_rev[1]["spec"]["replicas"] == 0 and by_rev[2]["spec"]["replicas"] == 10
    assert image_of(by_rev[2]) == "nginx:2"
    # The first step: a new RS of maxSurge pods (10 + 3 - 10 = 3), then the old one down by
    # maxUnavailable (13 - 8 - 3 = 2: the new pods are not available yet).
    events = bare.get_json("events", "-n", bns, "--field-selector", "involvedObject.kind=Deployment")["items"]
    msgs = [e["message"] for e in sorted(events, key=lambda e: e.get("firstTimestamp") or "")]
    new, old = by_rev[2]["metadata"]["name"], by_rev[1]["metadata"]["name"]
    assert f"Scaled up replica set {new} to 3" in msgs
    assert f"Scaled down replica set {old} to 8 from 10" in msgs


def test_rollover_mid_rollout(bare: Cluster, bare_api: Api, bns: str) -> None:
    """e2e `deployment should support rollover`: a stuck rollout (maxUnavailable 0, new pod
    never Ready) is replaced by a newer template; both earlier RSs end at 0/0."""
    bare.apply_yaml(deployment("ro", 4, "nginx:1", strategy=rolling(1, 0)), "-n", bns)
    bare_api.mark_all_ready_until(bns, lambda: complete(get_d(bare, bns, "ro")), "ro complete")
    with Recorder(bare, bns) as rec:
        bare.kubectl("set", "image", "deployment/ro", "c=nginx:broken", "-n", bns)

        def stuck() -> Any:
            by_rev = rs_by_revision(replica_sets(bare_api, bns))
            return len(by_rev) == 2 and by_rev[2].get("status", {}).get("replicas") == 1 and by_rev
        by_rev = eventually(stuck, "the new RS to get its surge pod")
        assert (by_rev[1]["spec"]["replicas"], by_rev[2]["spec"]["replicas"]) == (4, 1)
        bare.kubectl("set", "image", "deployment/ro", "c=nginx:3", "-n", bns)
        eventually(lambda: annotations(get_d(bare, bns, "ro")).get(REVISION) == "3", "revision 3")
        roll_marking_one_at_a_time(bare, bare_api, bns, "ro")
        eventually(lambda: len(bare_api.list(bns, "pods")) == 4, "old pods gone")
    check_rolling_invariants(rec, 4, 1, 0)
    by_rev = eventually(lambda: (lambda r: all(r[v].get("status", {}).get("replicas", 0) == 0 for v in (1, 2)) and r)(
        rs_by_revision(replica_sets(bare_api, bns))), "old RS status 0")
    assert [by_rev[v]["spec"]["replicas"] for v in (1, 2, 3)] == [0, 0, 4]
    assert image_of(by_rev[3]) == "nginx:3"


def test_proportional_scaling_8_5_to_20_13(bare: Cluster, bare_api: Api, bns: str) -> None:
    """e2e `deployment should support proportional scaling` (spec §4.3-A and §5)."""
    bare.apply_yaml(deployment("prop", 10, "nginx:1", strategy=rolling(3, 2)), "-n", bns)
    bare_api.mark_all_ready_until(bns, lambda: complete(get_d(bare, bns, "prop")), "prop complete")
    bare.kubectl("set", "image", "deployment/prop", "c=nginx:404", "-n", bns)

    def sizes() -> Any:
        by_rev = rs_by_revision(replica_sets(bare_api, bns))
        if len(by_rev) != 2:
            return None
        got = [(by_rev[v]["spec"]["replicas"], by_rev[v].get("status", {}).get("availableReplicas", 0),
                by_rev[v].get("status", {}).get("replicas", 0)) for v in (1, 2)]
        return got == [(8, 8, 8), (5, 0, 5)] and got
    eventually(sizes, "old RS 8 (8 available), new RS 5 (0 available)")
    assert get_d(bare, bns, "prop")["status"]["availableReplicas"] >= 8
    bare.kubectl("scale", "deployment/prop", "--replicas=30", "-n", bns)

    def scaled() -> Any:
        by_rev = rs_by_revision(replica_sets(bare_api, bns))
        return [by_rev[1]["spec"]["replicas"], by_rev[2]["spec"]["replicas"]] == [20, 13] and by_rev
    by_rev = eventually(scaled, "old RS 20, new RS 13")
    for rs in by_rev.values():
        assert annotations(rs)["deployment.kubernetes.io/desired-replicas"] == "30"
        assert annotations(rs)["deployment.kubernetes.io/max-replicas"] == "33"


def test_progress_deadline_exceeded(bare: Cluster, bare_api: Api, bns: str) -> None:
    """Integration TestFailedDeployment + `kubectl rollout status` on a timed-out rollout."""
    bare.apply_yaml(deployment("slow", 2, progressDeadlineSeconds=1), "-n", bns)
    d = eventually(lambda: (lambda d: (condition(d, "Progressing") or {}).get("reason") == "ProgressDeadlineExceeded"
                            and d)(get_d(bare, bns, "slow")), "ProgressDeadlineExceeded", timeout=15)
    cond = condition(d, "Progressing")
    [rs] = replica_sets(bare_api, bns)
    assert cond["status"] == "False"
    assert cond["message"] == f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.'
    res = bare.kubectl("rollout", "status", "deployment/slow", "-n", bns, "--timeout=20s", check=False)
    assert res.returncode == 1
    assert res.stderr.strip() == 'error: deployment "slow" exceeded its progress deadline'
    bare_api.mark_all_ready_until(bns, lambda: (condition(get_d(bare, bns, "slow"), "Progressing") or {}).get(
        "reason") == "NewReplicaSetAvailable", "NewReplicaSetAvailable after the pods got Ready")
    assert condition(get_d(bare, bns, "slow"), "Progressing")["status"] == "True"
    assert_status_lines(bare.kubectl("rollout", "status", "deployment/slow", "-n", bns).stdout, "slow")


def test_available_condition_follows_min_ready_seconds(bare: Cluster, bare_api: Api, bns: str) -> None:
    """Integration TestDeploymentAvailableCondition (spec §8.3), at 3 replicas."""
    bare.apply_yaml(deployment("av", 3, minReadySeconds=3600, progressDeadlineSeconds=7200), "-n", bns)

    def counts() -> tuple[int, ...]:
        st = get_d(bare, bns, "av").get("status") or {}
        return tuple(st.get(k, 0) for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                                            "unavailableReplicas"))
    eventually(lambda: counts() == (3, 3, 0, 0, 3), "3 pods, none ready")
    bare_api.mark_all_ready_until(bns, lambda: counts() == (3, 3, 3, 0, 3), "3 ready, none available yet")
    cond = condition(get_d(bare, bns, "av"), "Available")
    assert (cond["status"], cond["reason"], cond["message"]) == \
        ("False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
    bare.kubectl("patch", "deployment", "av", "-n", bns, "--type", "merge", "-p", '{"spec":{"minReadySeconds":1}}')
    eventually(lambda: counts() == (3, 3, 3, 3, 0), "all available once minReadySeconds is 1")
    d = get_d(bare, bns, "av")
    assert (condition(d, "Available")["status"], condition(d, "Available")["reason"]) == \
        ("True", "MinimumReplicasAvailable")
    [rs] = replica_sets(bare_api, bns)
    assert rs["spec"]["minReadySeconds"] == 1                   # propagated to the (new) RS


# --- strategies on simulated kubelets ------------------------------------------------------------------------------


def test_recreate_never_overlaps_old_and_new_pods(kube: Cluster, kube_api: Api, kns: str) -> None:
    """e2e `RecreateDeployment should delete old pods and create new ones`."""
    kube.apply_yaml(deployment("rec", 3, "nginx:1", strategy={"type": "Recreate"}), "-n", kns)
    wait_complete(kube, kns, "rec")
    with Recorder(kube, kns) as rec:
        d = json.loads(kube.kubectl("get", "deployment", "rec", "-n", kns, "-o", "json").stdout)
        d["spec"]["template"]["spec"]["containers"][0].update(name="web", image="nginx:2")
        kube.kubectl("replace", "-f", "-", "-n", kns, input=json.dumps(d))
        eventually(lambda: annotations(get_d(kube, kns, "rec")).get(REVISION) == "2", "revision 2")
        wait_complete(kube, kns, "rec")
    by_rev = rs_by_revision(replica_sets(kube_api, kns))
    old, new = by_rev[1]["metadata"]["name"], by_rev[2]["metadata"]["name"]
    saw_new = False
    for rv, st in rec.replay():
        owners = {owner_name(p) for p in st["pods"].values()}
        assert not (old in owners and new in owners), f"rv {rv}: old and new pods coexist"
        saw_new |= new in owners
        for dep in st["deployments"].values():
            s = dep.get("status") or {}
            assert not (s.get("updatedReplicas", 0) > 0 and s.get("replicas", 0) != s.get("updatedReplicas", 0)), \
                f"rv {rv}: Recreate reported a mixed status {s}"
    assert saw_new
    assert by_rev[1]["spec"]["replicas"] == 0 and by_rev[2]["spec"]["replicas"] == 3


def test_iterative_rollouts_eventually_progress(kube: Cluster, kube_api: Api, kns: str) -> None:
    """e2e `iterative rollouts should eventually progress`, with a fixed seed and fewer steps."""
    rng = random.Random(20260101)
    kube.apply_yaml(deployment("it", 6, strategy=rolling("25%", "25%"), progressDeadlineSeconds=300,
                               revisionHistoryLimit=2), "-n", kns)
    replicas, paused = 6, False
    for i in range(14):
        action = rng.choice(["env", "rollback", "scale", "pause", "delete-pod"])
        if action == "env":
            kube.kubectl("set", "env", "deployment/it", "-n", kns, f"A{i}=v{i}")
            if rng.random() < 0.5:
                replicas = max(1, replicas + rng.choice([-1, 1]))
                kube.kubectl("scale", "deployment/it", f"--replicas={replicas}", "-n", kns)
        elif action == "rollback":
            kube.kubectl("annotate", "deployment/it", "-n", kns, "deprecated.deployment.rollback.to=0", "--overwrite")
        elif action == "scale":
            replicas = max(1, replicas + rng.choice([-1, 1]))
            kube.kubectl("scale", "deployment/it", f"--replicas={replicas}", "-n", kns)
        elif action == "pause":
            kube.kubectl("rollout", "resume" if paused else "pause", "deployment/it", "-n", kns)
            paused = not paused
        else:
            live = [p["metadata"]["name"] for p in kube_api.list(kns, "pods") if not p["metadata"].get(
                "deletionTimestamp")]
            if live:
                kube.kubectl("delete", "pod", rng.choice(live), "-n", kns, "--wait=false", "--ignore-not-found")
    if paused:
        kube.kubectl("rollout", "resume", "deployment/it", "-n", kns)
    d = wait_complete(kube, kns, "it", timeout=45)
    assert d["spec"]["replicas"] == replicas
    eventually(lambda: condition(get_d(kube, kns, "it"), "Progressing")["reason"] == "NewReplicaSetAvailable",
               "Progressing NewReplicaSetAvailable")
    assert_status_lines(kube.kubectl("rollout", "status", "deployment/it", "-n", kns).stdout, "it")
    rss = eventually(lambda: (lambda r: len(r) <= 3 and r)(replica_sets(kube_api, kns)), "history cleaned to 2 old RSs")
    assert sum(rs["spec"]["replicas"] for rs in rss) == replicas


# --- pause / resume -----------------------------------------------------------------------------------------------


def test_paused_deployment(kube: Cluster, kube_api: Api, kns: str) -> None:
    """Integration TestPausedDeployment and TestScalePausedDeployment, through kubectl rollout."""
    def k(*args: str, check: bool = True) -> Any:
        return kube.kubectl(*args, "-n", kns, check=check)
    kube.apply_yaml(deployment("p", 2, "nginx:1", paused=True, progressDeadlineSeconds=600), "-n", kns)
    eventually(lambda: (get_d(kube, kns, "p").get("status") or {}).get("observedGeneration") == 1, "observed")
    assert replica_sets(kube_api, kns) == []                    # created paused: nothing rolls
    assert k("rollout", "resume", "deployment/p").stdout.strip() == "deployment.apps/p resumed"
    wait_complete(kube, kns, "p")
    assert k("rollout", "pause", "deployment/p").stdout.strip() == "deployment.apps/p paused"
    cond = eventually(lambda: (lambda c: c and c["reason"] == "DeploymentPaused" and c)(
        condition(get_d(kube, kns, "p"), "Progressing")), "DeploymentPaused")
    assert (cond["status"], cond["message"]) == ("Unknown", "Deployment is paused")
    res = k("rollout", "pause", "deployment/p", check=False)
    assert res.returncode == 1 and res.stderr.strip() == 'error: deployments.apps "p" is already paused'
    k("set", "image", "deployment/p", "c=nginx:2")
    d = eventually(lambda: (lambda d: d["status"]["observedGeneration"] == d["metadata"]["generation"] and d)(
        get_d(kube, kns, "p")), "the template change to be observed")
    [rs] = replica_sets(kube_api, kns)                          # the change does not roll
    assert image_of(rs) == "nginx:1" and annotations(d)[REVISION] == "1"
    res = k("rollout", "restart", "deployment/p", check=False)
    assert res.returncode == 1
    assert res.stderr.strip() == \
        'error: deployments.apps "p" can\'t restart paused deployment (run rollout resume first)'
    k("scale", "deployment/p", "--replicas=4")                  # a paused deployment still scales
    eventually(lambda: (lambda r: len(r) == 1 and r[0]["spec"]["replicas"] == 4
                        and r[0].get("status", {}).get("readyReplicas") == 4)(replica_sets(kube_api, kns)),
               "the paused deployment's RS scaled to 4")
    assert k("rollout", "resume", "deployment/p").stdout.strip() == "deployment.apps/p resumed"
    assert_status_lines(k("rollout", "status", "deployment/p", "--timeout=30s").stdout, "p")
    by_rev = rs_by_revision(replica_sets(kube_api, kns))
    assert image_of(by_rev[2]) == "nginx:2" and by_rev[2]["spec"]["replicas"] == 4
    assert by_rev[1]["spec"]["replicas"] == 0
    res = k("rollout", "resume", "deployment/p", check=False)
    assert res.returncode == 1 and res.stderr.strip() == 'error: deployments.apps "p" is not paused'
    # With a revision to go back to, kubectl still refuses to roll a paused deployment back.
    k("rollout", "pause", "deployment/p")
    res = k("rollout", "undo", "deployment/p", check=False)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1] == ("error: you cannot rollback a paused deployment; resume it first "
                                                   "with 'kubectl rollout resume' and try again")
    assert image_of(get_d(kube, kns, "p")) == "nginx:2"


# --- revisions: history cleanup, rollback chains, restart -----------------------------------------------------------


def test_revision_history_limit_cleans_old_replica_sets(kube: Cluster, kube_api: Api, kns: str) -> None:
    kube.apply_yaml(deployment("h", 1, "nginx:1", revisionHistoryLimit=1), "-n", kns)
    wait_complete(kube, kns, "h")
    for v in (2, 3, 4):
        kube.kubectl("set", "image", "deployment/h", f"c=nginx:{v}", "-n", kns)
        eventually(lambda v=v: annotations(get_d(kube, kns, "h")).get(REVISION) == str(v), f"revision {v}")
        wait_complete(kube, kns, "h")
    by_rev = eventually(lambda: (lambda r: sorted(r) == [3, 4] and r)(rs_by_revision(replica_sets(kube_api, kns))),
                        "only revisions 3 and 4 kept")
    assert image_of(by_rev[4]) == "nginx:4" and by_rev[3]["spec"]["replicas"] == 0


def test_deployment_deletes_adopted_old_replica_set_with_history_limit_0(kube: Cluster, kube_api: Api,
                                                                          kns: str) -> None:
    """e2e `deployment should delete old replica sets`."""
    labels = {"name": "cleanup-pod"}
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "test-cleanup-controller", "labels": labels},
          "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                   "template": {"metadata": {"labels": labels},
                                "spec": {"containers": [{"name": "httpd", "image": "httpd:2.4"}]}}}}
    kube.apply_yaml(rs, "-n", kns)
    eventually(lambda: kube_api.get(kns, "replicasets", "test-cleanup-controller").get("status", {}).get(
        "readyReplicas") == 1, "the pre-existing RS ready")
    kube.apply_yaml(deployment("test-cleanup-deployment", 1, "agnhost:2.4", labels=labels, revisionHistoryLimit=0),
                    "-n", kns)
    wait_complete(kube, kns, "test-cleanup-deployment")
    [left] = eventually(lambda: (lambda r: len(r) == 1 and r)(replica_sets(kube_api, kns)), "the old RS deleted")
    assert left["metadata"]["name"] != "test-cleanup-controller" and image_of(left) == "agnhost:2.4"


def test_rolling_update_adopts_old_replica_set_and_continues_its_revision(kube: Cluster, kube_api: Api,
                                                                         kns: str) -> None:
    """[Conformance] RollingUpdateDeployment: an adopted RS with revision 3546343826724305832
    makes the new RS's revision 3546343826724305833."""
    labels = {"name": "sample-pod", "pod": "httpd"}
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "test-rolling-update-controller", "labels": labels,
                       "annotations": {REVISION: "3546343826724305832"}},
          "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                   "template": {"metadata": {"labels": labels},
                                "spec": {"containers": [{"name": "httpd", "image": "httpd:2.4"}]}}}}
    kube.apply_yaml(rs, "-n", kns)
    kube.apply_yaml(deployment("test-rolling-update-deployment", 1, "agnhost:2.4", labels=labels), "-n", kns)
    d = wait_complete(kube, kns, "test-rolling-update-deployment")
    assert annotations(d)[REVISION] == "3546343826724305833"
    rss = replica_sets(kube_api, kns)
    old = [r for r in rss if r["metadata"]["name"] == "test-rolling-update-controller"]
    assert len(rss) == 2 and len(old) == 1
    assert owner_name(old[0]) == "test-rolling-update-deployment" and old[0]["spec"]["replicas"] == 0


def history(kube: Cluster, ns: str, name: str, *args: str) -> str:
    return kube.kubectl("rollout", "history", f"deployment/{name}", "-n", ns, *args).stdout


def test_rollback_undo_chain_and_history(kube: Cluster, kube_api: Api, kns: str) -> None:
    """test/cmd/apps.sh's rollback block (spec §7.2), with change-cause and rollout history."""
    def k(*args: str, check: bool = True) -> Any:
        return kube.kubectl(*args, "-n", kns, check=check)

    def at_revision(rev: str) -> dict[str, Any]:
        return eventually(lambda: (lambda d: annotations(d).get(REVISION) == rev and complete(d) and d)(
            get_d(kube, kns, "nginx")), f"revision {rev} rolled out")
    k("create", "deployment", "nginx", "--image=nginx:r1", "--replicas=2")
    at_revision("1")
    assert history(kube, kns, "nginx") == "deployment.apps/nginx \nREVISION  CHANGE-CAUSE\n1         <none>\n\n"
    k("annotate", "deployment/nginx", f"{CHANGE_CAUSE}=create r1")
    assert k("rollout", "undo", "deployment/nginx", "--to-revision=1").stdout.strip() == \
        "deployment.apps/nginx skipped rollback (current template already matches revision 1)"
    k("set", "image", "deployment/nginx", "nginx=nginx:r2")
    k("annotate", "deployment/nginx", f"{CHANGE_CAUSE}=image r2", "--overwrite")
    at_revision("2")
    eventually(lambda: "2         image r2" in history(kube, kns, "nginx"), "change-cause copied to revision 2")
    assert history(kube, kns, "nginx") == ("deployment.apps/nginx \nREVISION  CHANGE-CAUSE\n"
                                           "1         create r1\n2         image r2\n\n")
    one = history(kube, kns, "nginx", "--revision=1")
    assert one.startswith("deployment.apps/nginx with revision #1\nPod Template:\n")
    assert re.search(r"Image:\s+nginx:r1\n", one) and re.search(r"pod-template-hash=\w+", one)
    res = k("rollout", "history", "deployment/nginx", "--revision=7", check=False)
    assert res.returncode == 1 and res.stderr.strip() == "error: unable to find the specified revision"

    assert k("rollout", "undo", "deployment/nginx", "--to-revision=1").stdout.strip() == \
        "deployment.apps/nginx rolled back"
    d = at_revision("3")
    assert image_of(d) == "nginx:r1" and annotations(d)[CHANGE_CAUSE] == "create r1"   # reverted with the template
    by_rev = rs_by_revision(replica_sets(kube_api, kns))
    assert sorted(by_rev) == [2, 3] and annotations(by_rev[3])[REVISION_HISTORY] == "1"
    res = k("rollout", "undo", "deployment/nginx", "--to-revision=1000000", check=False)
    assert res.returncode == 1 and res.stderr.strip() == "error: unable to find specified revision 1000000 in history"
    k("rollout", "undo", "deployment/nginx")
    assert image_of(at_revision("4")) == "nginx:r2"
    res = k("rollout", "status", "deployment/nginx", "--revision=3", check=False)
    assert res.returncode == 1
    assert res.stderr.strip() == "error: desired revision (3) is different from the running revision (4)"
    k("rollout", "undo", "deployment/nginx")
    assert image_of(at_revision("5")) == "nginx:r1"
    by_rev = rs_by_revision(replica_sets(kube_api, kns))
    assert sorted(by_rev) == [4, 5] and annotations(by_rev[5])[REVISION_HISTORY] == "1,3"
    assert history(kube, kns, "nginx") == ("deployment.apps/nginx \nREVISION  CHANGE-CAUSE\n"
                                           "4         image r2\n5         create r1\n\n")

    # The controller-side rollback request (deprecated annotation, spec §7.3).
    k("annotate", "deployment/nginx", "deprecated.deployment.rollback.to=0")
    assert image_of(at_revision("6")) == "nginx:r2"
    assert "deprecated.deployment.rollback.to" not in annotations(get_d(kube, kns, "nginx"))
    k("annotate", "deployment/nginx", "deprecated.deployment.rollback.to=99")
    eventually(lambda: "deprecated.deployment.rollback.to" not in annotations(get_d(kube, kns, "nginx")),
               "the rollback request cleared")
    events = {(e["type"], e["reason"], e["message"]) for e in kube.get_json(
        "events", "-n", kns, "--field-selector", "involvedObject.name=nginx,involvedObject.kind=Deployment")["items"]}
    assert ("Normal", "DeploymentRollback", 'Rolled back deployment "nginx" to revision 4') in events
    assert ("Warning", "DeploymentRollbackRevisionNotFound", "Unable to find the revision to rollback to.") in events


def test_rollout_restart_and_describe(kube: Cluster, kube_api: Api, kns: str) -> None:
    kube.kubectl("create", "deployment", "r", "--image=nginx:1", "--replicas=2", "-n", kns)
    wait_complete(kube, kns, "r")
    old = replica_sets(kube_api, kns)[0]["metadata"]["name"]
    assert kube.kubectl("rollout", "restart", "deployment/r", "-n", kns).stdout.strip() == "deployment.apps/r restarted"
    assert_status_lines(kube.kubectl("rollout", "status", "deployment/r", "-n", kns, "--timeout=30s").stdout, "r")
    d = wait_complete(kube, kns, "r")
    assert annotations(d)[REVISION] == "2"
    restarted = d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", restarted)
    managers = json.loads(kube.kubectl("get", "deployment", "r", "-n", kns, "-o", "json",
                                       "--show-managed-fields").stdout)
    assert "kubectl-rollout" in {m["manager"] for m in managers["metadata"]["managedFields"]}
    new = rs_by_revision(replica_sets(kube_api, kns))[2]
    assert new["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] == restarted
    new_name = new["metadata"]["name"]

    out = eventually(lambda: (lambda o: f"Scaled down replica set {old} to 0" in o and o)(
        kube.kubectl("describe", "deployment", "r", "-n", kns).stdout), "the scale-down event")
    assert re.search(r"^Replicas:\s+2 desired \| 2 updated \| 2 total \| 2 available \| 0 unavailable$", out, re.M)
    assert re.search(r"^StrategyType:\s+RollingUpdate$", out, re.M)
    assert re.search(r"^RollingUpdateStrategy:\s+25% max unavailable, 25% max surge$", out, re.M)
    assert re.search(r"^\s+Available\s+True\s+MinimumReplicasAvailable$", out, re.M)
    assert re.search(r"^\s+Progressing\s+True\s+NewReplicaSetAvailable$", out, re.M)
    assert re.search(rf"^OldReplicaSets:\s+{old} \(0/0 replicas created\)$", out, re.M)
    assert re.search(rf"^NewReplicaSet:\s+{new_name} \(2/2 replicas created\)$", out, re.M)
    assert re.search(rf"ScalingReplicaSet .*deployment-controller\s+Scaled up replica set {old} to 2$", out, re.M)
    assert re.search(rf"Scaled up replica set {new_name} to 1$", out, re.M)
    assert re.search(rf"Scaled down replica set {old} to 1 from 2$", out, re.M)


# --- ownership: orphan and adopt, cascading delete --------------------------------------------------------------------


def test_orphan_then_adopt_same_replica_set(kube: Cluster, kube_api: Api, kns: str) -> None:
    """e2e `test Deployment ReplicaSet orphaning and adoption regarding controllerRef`."""
    labels = {"app": "orphan-adopt"}
    kube.apply_yaml(deployment("test-orphan-deployment", 1, labels=labels), "-n", kns)
    wait_complete(kube, kns, "test-orphan-deployment")
    [rs] = replica_sets(kube_api, kns)
    kube.kubectl("delete", "deployment", "test-orphan-deployment", "-n", kns, "--cascade=orphan")
    eventually(lambda: not kube_api.get(kns, "replicasets", rs["metadata"]["name"])["metadata"].get("ownerReferences"),
               "the RS orphaned")
    assert len([p for p in kube_api.list(kns, "pods") if is_ready(p)]) == 1          # pods untouched
    kube.apply_yaml(deployment("test-adopt-deployment", 1, labels=labels), "-n", kns)
    d = wait_complete(kube, kns, "test-adopt-deployment")
    [adopted] = replica_sets(kube_api, kns)
    assert adopted["metadata"]["uid"] == rs["metadata"]["uid"]
    [ref] = adopted["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == \
        ("Deployment", "test-adopt-deployment", d["metadata"]["uid"], True)


def test_delete_deployment_cascades_to_replica_sets_and_pods(kube: Cluster, kube_api: Api, kns: str) -> None:
    """e2e `deployment reaping should cascade to its replica sets and pods`."""
    kube.apply_yaml(deployment("reap", 2, "nginx:1"), "-n", kns)
    wait_complete(kube, kns, "reap")
    kube.kubectl("set", "image", "deployment/reap", "c=nginx:2", "-n", kns)
    wait_complete(kube, kns, "reap")
    assert len(replica_sets(kube_api, kns)) == 2
    out = kube.kubectl("delete", "deployment", "reap", "-n", kns).stdout.strip()
    assert out == f'deployment.apps "reap" deleted from {kns} namespace'
    res = kube.kubectl("get", "deployment", "reap", "-n", kns, check=False)
    assert res.returncode == 1 and 'deployments.apps "reap" not found' in res.stderr
    eventually(lambda: replica_sets(kube_api, kns) == [] and kube_api.list(kns, "pods") == [],
               "RSs and pods collected")


# --- subresources ----------------------------------------------------------------------------------------------------


def test_scale_subresource_and_status_endpoint(kube: Cluster, kube_api: Api, kns: str) -> None:
    """[Conformance] scale subresource; `should validate Deployment Status endpoints`: a
    condition written through /status by someone else survives the controller's writes."""
    kube.apply_yaml(deployment("sc", 1), "-n", kns)
    wait_complete(kube, kns, "sc")
    path = f"/apis/apps/v1/namespaces/{kns}/deployments/sc"
    scale = kube_api.call("GET", f"{path}/scale")
    assert (scale["kind"], scale["spec"]["replicas"], scale["status"]["replicas"]) == ("Scale", 1, 1)
    kube.kubectl("scale", "deployment/sc", "--replicas=2", "-n", kns)
    kube_api.call("PATCH", f"{path}/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json")
    d = wait_complete(kube, kns, "sc")
    assert d["spec"]["replicas"] == 4
    kube.kubectl("patch", "deployment", "sc", "-n", kns, "--subresource", "status", "--type", "json", "-p", json.dumps(
        [{"op": "add", "path": "/status/conditions/-",
          "value": {"type": "StatusPatched", "status": "True", "reason": "E2E", "message": "Set from e2e test"}}]))
    kube.kubectl("scale", "deployment/sc", "--replicas=3", "-n", kns)
    d = wait_complete(kube, kns, "sc")
    assert d["status"]["replicas"] == 3
    assert (condition(d, "StatusPatched") or {}).get("message") == "Set from e2e test"
