"""The official `kubernetes` Python client against `kubeplane up`: CRUD, watch, 410, 409,
validation messages, and durability across kill -9."""
from __future__ import annotations

import json
import signal
from typing import Any, Iterator

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from .cluster import Cluster


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[Any]:
    with cluster.python_client() as c:
        yield c


def dep_body(name: str, **spec: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}},
    }
    body["spec"].update(spec)
    return body


def test_crud(api: Any) -> None:
    apps = client.AppsV1Api(api)
    created = apps.create_namespaced_deployment("default", dep_body("py-crud"))
    assert created.metadata.generation == 1
    got = apps.read_namespaced_deployment("py-crud", "default")
    assert got.spec.strategy.rolling_update.max_surge == "25%"
    for _ in range(10):       # the deployment controller writes status meanwhile: retry on conflict
        got = apps.read_namespaced_deployment("py-crud", "default")
        got.spec.replicas = 3
        try:
            updated = apps.replace_namespaced_deployment("py-crud", "default", got)
            break
        except ApiException as e:
            assert e.status == 409
    assert updated.spec.replicas == 3 and updated.metadata.generation == 2
    patched = apps.patch_namespaced_deployment_scale("py-crud", "default", {"spec": {"replicas": 2}})
    assert patched.spec.replicas == 2
    names = [d.metadata.name for d in apps.list_namespaced_deployment("default").items]
    assert "py-crud" in names
    apps.delete_namespaced_deployment("py-crud", "default")
    with pytest.raises(ApiException) as exc:
        apps.read_namespaced_deployment("py-crud", "default")
    assert exc.value.status == 404


def test_stale_update_is_409_conflict(api: Any) -> None:
    core = client.CoreV1Api(api)
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "py-stale"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("py-stale", "default", {"data": {"a": "2"}})
    cm.data = {"a": "3"}                 # still carries the first resourceVersion
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("py-stale", "default", cm)
    assert exc.value.status == 409
    body = json.loads(exc.value.body)
    assert body["reason"] == "Conflict"
    assert "the object has been modified; please apply your changes to the latest version" in body["message"]
    assert core.read_namespaced_config_map("py-stale", "default").data == {"a": "2"}


def test_duplicate_create_is_409_already_exists(api: Any) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "py-dup"}})
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "py-dup"}})
    assert exc.value.status == 409 and json.loads(exc.value.body)["reason"] == "AlreadyExists"


def test_watch_sees_added_modified_deleted(api: Any) -> None:
    core = client.CoreV1Api(api)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "py-w", "labels": {"w": "1"}}})
    core.patch_namespaced_config_map("py-w", "default", {"data": {"x": "y"}})
    core.delete_namespaced_config_map("py-w", "default")
    w = watch.Watch()
    seen = []
    for ev in w.stream(core.list_namespaced_config_map, "default", label_selector="w=1",
                       resource_version=rv, timeout_seconds=5):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 3:
            w.stop()
    assert seen == [("ADDED", "py-w"), ("MODIFIED", "py-w"), ("DELETED", "py-w")]


def test_watch_from_compacted_revision_is_410() -> None:
    c = Cluster(extra_args=("--watch-history", "5")).start()     # a tiny history window
    try:
        with c.python_client() as api:
            core = client.CoreV1Api(api)
            first_rv = core.list_namespaced_config_map("default").metadata.resource_version
            for i in range(10):
                core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}})
            resp = core.list_namespaced_config_map("default", watch=True, resource_version=first_rv,
                                                   timeout_seconds=5, _preload_content=False)
            event = json.loads(resp.readline())
            resp.close()
            assert event["type"] == "ERROR"
            assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
            assert event["object"]["message"].startswith("too old resource version")
            w = watch.Watch()
            with pytest.raises(ApiException) as exc:
                for _ in w.stream(core.list_namespaced_config_map, "default", resource_version=first_rv,
                                  timeout_seconds=5):
                    pass
            assert exc.value.status == 410
    finally:
        c.cleanup()


# Every Deployment validation rule of spec section 2, with its field path and detail text.
VALIDATION_CASES = [
    pytest.param({"selector": {"matchLabels": {"app": "other"}}}, "spec.template.metadata.labels",
                 "`selector` does not match template `labels`", id="selector-mismatch"),
    pytest.param({"selector": {}}, "spec.selector", "empty selector is invalid for deployment", id="empty-selector"),
    pytest.param({"replicas": -1}, "spec.replicas", "must be greater than or equal to 0", id="replicas"),
    pytest.param({"minReadySeconds": -1}, "spec.minReadySeconds", "must be greater than or equal to 0", id="minready"),
    pytest.param({"revisionHistoryLimit": -1}, "spec.revisionHistoryLimit", "must be greater than or equal to 0",
                 id="history"),
    pytest.param({"progressDeadlineSeconds": -1}, "spec.progressDeadlineSeconds",
                 "must be greater than or equal to 0", id="deadline"),
    pytest.param({"progressDeadlineSeconds": 5, "minReadySeconds": 5}, "spec.progressDeadlineSeconds",
                 "must be greater than minReadySeconds", id="deadline-vs-minready"),
    pytest.param({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}},
                 "spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when `maxSurge` is 0", id="both-zero"),
    pytest.param({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "110%"}}},
                 "spec.strategy.rollingUpdate.maxUnavailable", "must not be greater than 100%", id="over-100"),
    pytest.param({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": -1}}},
                 "spec.strategy.rollingUpdate.maxSurge", "must be greater than or equal to 0", id="surge-negative"),
    pytest.param({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "20Percent"}}},
                 "spec.strategy.rollingUpdate.maxSurge",
                 "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
                 "regex used for validation is '[0-9]+%')", id="bad-percent"),
    pytest.param({"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}, "spec.strategy.rollingUpdate",
                 "may not be specified when strategy `type` is 'Recreate'", id="recreate-with-rolling"),
    pytest.param({"strategy": {"type": "Foo"}}, "spec.strategy",
                 'supported values: "Recreate", "RollingUpdate"', id="bad-strategy"),
]


@pytest.mark.parametrize("spec, field, detail", VALIDATION_CASES)
def test_deployment_validation_messages(api: Any, spec: dict[str, Any], field: str, detail: str) -> None:
    apps = client.AppsV1Api(api)
    with pytest.raises(ApiException) as exc:
        apps.create_namespaced_deployment("default", dep_body("py-invalid", **spec))
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "Deployment"
    causes = [(c["field"], c["message"]) for c in body["details"]["causes"]]
    assert any(f == field and m.endswith(detail) for f, m in causes), causes
    assert body["message"].startswith('Deployment.apps "py-invalid" is invalid: ')
    with pytest.raises(ApiException):
        apps.read_namespaced_deployment("py-invalid", "default")


def test_template_rules(api: Any) -> None:
    apps = client.AppsV1Api(api)
    body = dep_body("py-tmpl")
    body["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    body["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 10
    with pytest.raises(ApiException) as exc:
        apps.create_namespaced_deployment("default", body)
    causes = {c["field"]: c["message"] for c in json.loads(exc.value.body)["details"]["causes"]}
    assert causes["spec.template.spec.restartPolicy"] == 'Unsupported value: "Never": supported values: "Always"'
    assert causes["spec.template.spec.activeDeadlineSeconds"] == \
        "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"


def test_selector_is_immutable(api: Any) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_deployment("default", dep_body("py-immut"))
    with pytest.raises(ApiException) as exc:
        apps.patch_namespaced_deployment("py-immut", "default", [
            {"op": "replace", "path": "/spec/selector", "value": {"matchLabels": {"app": "py-immut", "x": "y"}}},
            {"op": "add", "path": "/spec/template/metadata/labels/x", "value": "y"}])
    assert exc.value.status == 422
    assert "field is immutable" in json.loads(exc.value.body)["message"]


def test_kill_9_keeps_every_object_and_the_revision_sequence() -> None:
    c = Cluster().start()
    try:
        c.kubectl("create", "deployment", "durable", "--image", "nginx")
        c.kubectl("create", "configmap", "durable-cm", "--from-literal", "a=b")
        raw = c.kubectl("get", "--raw", "/api/v1/namespaces/default/configmaps").stdout
        rv_before = int(json.loads(raw)["metadata"]["resourceVersion"])
        uid = c.get_json("deployment", "durable")["metadata"]["uid"]
        c.stop(signal.SIGKILL)
        c.start()
        assert c.get_json("deployment", "durable")["metadata"]["uid"] == uid
        assert c.get_json("configmap", "durable-cm")["data"] == {"a": "b"}
        c.kubectl("create", "configmap", "after", "--from-literal", "a=b")
        rv_after = int(c.get_json("configmap", "after")["metadata"]["resourceVersion"])
        assert rv_after > rv_before
    finally:
        c.cleanup()


def test_metadata_and_container_rules(api: Any) -> None:
    apps = client.AppsV1Api(api)
    body = dep_body("Bad_Name")
    body["spec"]["template"]["spec"]["containers"] = []
    with pytest.raises(ApiException) as exc:
        apps.create_namespaced_deployment("default", body)
    causes = {c["field"]: c["message"] for c in json.loads(exc.value.body)["details"]["causes"]}
    assert causes["metadata.name"].startswith(
        'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters')
    assert causes["spec.template.spec.containers"] == "Required value"


def test_missing_selector_is_required(cluster: Cluster) -> None:
    body = dep_body("py-nosel")          # the Python client refuses this locally; kubectl sends it
    del body["spec"]["selector"]
    res = cluster.kubectl("create", "-f", "-", input=json.dumps(body), check=False)
    assert res.returncode != 0
    assert "spec.selector: Required value" in res.stderr
    assert "`selector` does not match template `labels`" in res.stderr


def test_dns_subdomain_name_gets_a_warning_header(cluster: Cluster) -> None:
    body = json.dumps(dep_body("web.v1"))
    res = cluster.kubectl("create", "-f", "-", input=body)
    assert "metadata.name: this is used in Pod names and hostnames" in res.stderr
