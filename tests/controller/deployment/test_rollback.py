"""rollback.go: the deprecated rollback annotation, its events and skipped cases."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import ObjectName
from kubeplane.controller.deployment import rollback
from kubeplane.controller.deployment.util import deployment_util as du

from deployment_testutil import Fixture, deployment_dict, new_deployment, new_fixture, owned_rs_dict, rs_status

KEY = ObjectName("default", "foo")


@pytest.fixture
async def f() -> Fixture:
    return await new_fixture()


async def _setup(f: Fixture, rollback_to: str, *, with_old: bool = True,
                 old_annotations: dict[str, str] | None = None) -> Any:
    """Deployment at revision 2 (rs2 current) with rs1 (revision 1, another template).

    No progress deadline (MaxInt32), as upstream's fixture (nil): otherwise the first sync
    of a Deployment without a Progressing condition also writes FoundNewReplicaSet."""
    [d] = await f.fake.seed(deployment_dict("foo", 1, progressDeadlineSeconds=du.MAX_INT32))
    d.metadata.annotations = {du.REVISION_ANNOTATION: "2", du.DEPRECATED_ROLLBACK_TO: rollback_to,
                              "kubernetes.io/change-cause": "edit"}
    f.fake.recorder.recording = False
    d = await f.fake.apps_v1().deployments("default").update(d)
    f.fake.recorder.recording = True
    f.add_to_cache(d)
    old_template = types.to_dict(d.spec.template)
    old_template["spec"]["terminationGracePeriodSeconds"] = 1
    rss = [owned_rs_dict(d, "rs-new", 1, status=rs_status(1),
                         annotations={du.REVISION_ANNOTATION: "2", "kubernetes.io/change-cause": "edit",
                                      du.DESIRED_REPLICAS_ANNOTATION: "1"})]
    if with_old:
        rss.append(owned_rs_dict(d, "rs-old", 0, template=old_template,
                                 annotations=old_annotations or {du.REVISION_ANNOTATION: "1"}))
    await f.seed(*rss)
    return d


async def test_reentrant_rollback(f: Fixture) -> None:
    """Upstream: TestReentrantRollback — rollback to 0 (the last revision): exactly one
    action, an update of the Deployment; no ReplicaSet writes."""
    await _setup(f, "0", old_annotations={du.REVISION_ANNOTATION: "1", "kubernetes.io/change-cause": "create"})
    f.expect("update", "deployments")
    await f.run()
    d = await f.get_deployment()
    assert d.spec.template.spec.termination_grace_period_seconds == 1          # rs1's template
    assert "pod-template-hash" not in d.spec.template.metadata.labels
    assert du.DEPRECATED_ROLLBACK_TO not in d.metadata.annotations
    # Annotations come back from the RS (skip-list keys keep the Deployment's values).
    assert d.metadata.annotations == {du.REVISION_ANNOTATION: "2", "kubernetes.io/change-cause": "create"}
    assert f.recorder.events == ['Normal DeploymentRollback Rolled back deployment "foo" to revision 1']


async def test_rollback_to_missing_revision(f: Fixture) -> None:
    await _setup(f, "5")
    f.expect("update", "deployments")
    await f.run()
    assert f.recorder.events == ["Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to."]
    assert du.DEPRECATED_ROLLBACK_TO not in (await f.get_deployment()).metadata.annotations


async def test_rollback_without_last_revision(f: Fixture) -> None:
    await _setup(f, "0", with_old=False)
    f.expect("update", "deployments")
    await f.run()
    assert f.recorder.events == ["Warning DeploymentRollbackRevisionNotFound Unable to find last revision."]


async def test_rollback_to_same_template_is_skipped(f: Fixture) -> None:
    await _setup(f, "2")
    f.expect("update", "deployments")
    await f.run()
    assert f.recorder.events == ["Warning DeploymentRollbackTemplateUnchanged The rollback revision contains the same "
                                 'template as current deployment "foo"']
    d = await f.get_deployment()
    assert d.spec.template.spec.termination_grace_period_seconds == 30            # unchanged
    assert du.DEPRECATED_ROLLBACK_TO not in d.metadata.annotations


@pytest.mark.parametrize("value,expected", [("", None), ("3", 3), ("0", 0), ("x", None), ("-1", -1)])
def test_get_set_rollback_to(value: str, expected: int | None) -> None:
    d = new_deployment("foo", 1)
    d.metadata.annotations = {du.DEPRECATED_ROLLBACK_TO: value}
    assert rollback.get_rollback_to(d) == expected
    rollback.set_rollback_to(d, 4)
    assert d.metadata.annotations[du.DEPRECATED_ROLLBACK_TO] == "4"
    rollback.set_rollback_to(d, None)
    assert du.DEPRECATED_ROLLBACK_TO not in d.metadata.annotations
