"""StatefulSet, DaemonSet, ControllerRevision, ReplicationController and PodTemplate validation
with upstream's messages (pkg/apis/{apps,core}/validation/validation_test.go cases)."""
from __future__ import annotations

import copy
from typing import Any

from kubeplane.api import defaults as pod_defaults
from kubeplane.api.defaulting import apps as defaults
from kubeplane.api.defaulting import core_controllers
from kubeplane.api.validation import apps as v
from kubeplane.api.validation import core


def _template(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                                     "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}]}],
                     **spec}}


def _meta() -> dict[str, Any]:
    return {"name": "web", "namespace": "default", "resourceVersion": "1"}


def _sts(**spec: Any) -> dict[str, Any]:
    sts = {"metadata": _meta(), "spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "nginx",
                                         "template": _template(),
                                         "volumeClaimTemplates": [{"metadata": {"name": "www"},
                                                                   "spec": {"accessModes": ["ReadWriteOnce"]}}],
                                         **spec}}
    defaults.set_defaults_stateful_set(sts)
    return sts


def _msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_a_stateful_set_mounting_its_claim_templates_is_valid() -> None:
    assert v.validate_stateful_set(_sts()) == []


def test_stateful_set_spec_rules() -> None:
    sts = _sts(podManagementPolicy="Sometimes", replicas=-1)
    sts["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    sts["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    sts["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    msgs = _msgs(v.validate_stateful_set(sts))
    assert 'spec.podManagementPolicy: Invalid value: "Sometimes": must be \'OrderedReady\' or \'Parallel\'' in msgs
    assert "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in msgs
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"' in msgs
    assert "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported" in msgs
    assert any(m.startswith("spec.template.metadata.labels: Invalid value") and
               m.endswith("`selector` does not match template `labels`") for m in msgs)


def test_stateful_set_selector_and_strategy() -> None:
    sts = _sts()
    del sts["spec"]["selector"]
    assert "spec.selector: Required value" in _msgs(v.validate_stateful_set(sts))
    sts = _sts(updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 1}})
    assert any(m.startswith("spec.updateStrategy.rollingUpdate: Invalid value") and
               m.endswith("only allowed for updateStrategy 'RollingUpdate'") for m in _msgs(v.validate_stateful_set(sts)))
    sts = _sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": -1, "maxUnavailable": 0}})
    msgs = _msgs(v.validate_stateful_set(sts))
    assert "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0" in msgs
    assert "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0" in msgs
    sts = _sts(persistentVolumeClaimRetentionPolicy={"whenDeleted": "Keep", "whenScaled": "Retain"})
    assert 'spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": supported values: ' \
           '"Retain", "Delete"' in _msgs(v.validate_stateful_set(sts))


def test_stateful_set_update_allows_only_some_fields() -> None:
    old = _sts()
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    assert v.validate_stateful_set_update(new, old) == []
    new["spec"]["serviceName"] = "other"
    assert "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', " \
           "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' " \
           "are forbidden" in _msgs(v.validate_stateful_set_update(new, old))
    new["spec"]["serviceName"] = old["spec"]["serviceName"]
    new["spec"]["revisionHistoryLimit"] = 3
    assert v.validate_stateful_set_update(new, old) == []


def test_stateful_set_status() -> None:
    old = _sts()
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "readyReplicas": 2, "collisionCount": 0}
    old["status"] = {"collisionCount": 1}
    msgs = _msgs(v.validate_stateful_set_status_update(new, old))
    assert "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas" in msgs
    assert "status.collisionCount: Invalid value: 0: cannot be decremented" in msgs


def _ds(**spec: Any) -> dict[str, Any]:
    template = _template()
    template["spec"]["containers"][0].pop("volumeMounts")
    ds = {"metadata": _meta(), "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template, **spec}}
    defaults.set_defaults_daemon_set(ds)
    return ds


def test_daemon_set_rules() -> None:
    assert v.validate_daemon_set(_ds()) == []
    ds = _ds(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}})
    assert "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero" \
        in _msgs(v.validate_daemon_set(ds))
    ds = _ds(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}})
    assert "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0" in \
        _msgs(v.validate_daemon_set(ds))
    ds = _ds(updateStrategy={"type": "Sideways"})
    assert any(m.startswith("spec.updateStrategy: Unsupported value") for m in _msgs(v.validate_daemon_set(ds)))
    ds = _ds(selector={})
    assert "spec.selector: Invalid value: {}: empty selector is invalid for daemonset" in _msgs(v.validate_daemon_set(ds)) \
        or any(m.endswith("empty selector is invalid for daemonset") for m in _msgs(v.validate_daemon_set(ds)))
    ds = _ds()
    ds["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 3
    assert "spec.template.spec.activeDeadlineSeconds: Invalid value: 3: activeDeadlineSeconds must be nil for daemonset" \
        in _msgs(v.validate_daemon_set(ds))


def test_daemon_set_selector_is_immutable() -> None:
    old = _ds()
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "x": "y"}}
    new["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    assert any(m.startswith("spec.selector: Invalid value") and m.endswith("field is immutable")
               for m in _msgs(v.validate_daemon_set_update(new, old)))


def test_controller_revision() -> None:
    cr = {"metadata": _meta(), "revision": -1}
    msgs = _msgs(v.validate_controller_revision(cr))
    assert "data: Required value: data is mandatory" in msgs
    assert "revision: Invalid value: -1: must be greater than or equal to 0" in msgs
    old = {"metadata": _meta(), "data": {"a": 1}, "revision": 1}
    new = {**copy.deepcopy(old), "data": {"a": 2}}
    assert any(m.startswith("data: Invalid value") and m.endswith("field is immutable")
               for m in _msgs(v.validate_controller_revision_update(new, old)))


def _rc(**spec: Any) -> dict[str, Any]:
    template = _template()
    template["spec"]["containers"][0].pop("volumeMounts")
    rc = {"metadata": _meta(), "spec": {"template": template, **spec}}
    core_controllers.set_defaults_replication_controller(rc)
    return rc


def test_replication_controller_rules() -> None:
    assert core.validate_replication_controller(_rc()) == []
    rc = _rc(selector={"app": "other"})
    assert any(m.startswith("spec.template.metadata.labels: Invalid value") and
               m.endswith("`selector` does not match template `labels`") for m in _msgs(core.validate_replication_controller(rc)))
    missing = {"metadata": _meta(), "spec": {"replicas": 1}}
    msgs = _msgs(core.validate_replication_controller(missing))
    assert "spec.selector: Required value" in msgs and "spec.template: Required value" in msgs
    rc = _rc()
    rc["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert 'spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"' in \
        _msgs(core.validate_replication_controller(rc))


def test_replication_controller_status() -> None:
    old = _rc()
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 2}
    msgs = _msgs(core.validate_replication_controller_status_update(new, old))
    assert "status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas" in msgs
    assert "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas" in msgs


def test_pod_template() -> None:
    template = _template()
    template["spec"]["containers"][0].pop("volumeMounts")
    pt = {"metadata": _meta(), "template": template}
    pod_defaults.set_defaults_pod_spec(pt["template"]["spec"])
    assert core.validate_pod_template(pt) == []
    del pt["template"]["spec"]["containers"][0]["image"]
    assert "template.spec.containers[0].image: Required value" in _msgs(core.validate_pod_template(pt))


def test_stateful_set_warnings() -> None:
    assert v.stateful_set_warnings(_sts(revisionHistoryLimit=-1)) == [
        "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended"]
    assert v.stateful_set_warnings(_sts()) == []
