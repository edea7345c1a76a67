"""Rollback through the deprecated `deprecated.deployment.rollback.to` annotation.

apps/v1 dropped spec.rollbackTo; the annotation round-trips it and is still honoured
(`kubectl rollout undo` patches the template client-side instead). "0" means the previous
revision.

Upstream: pkg/controller/deployment/rollback.go
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...api import errors
from ...api.types import apps_v1
from .. import controller_utils as cu
from . import sync
from .util import deployment_util as du

if TYPE_CHECKING:
    from .deployment_controller import DeploymentController

log = logging.getLogger(__name__)


async def rollback(dc: DeploymentController, d: apps_v1.Deployment, rs_list: list[apps_v1.ReplicaSet]) -> None:
    """Roll d back to the requested revision; in every case clear the request.

    Revision 0 means the last one (second highest); a revision that cannot be found gives
    up with a DeploymentRollbackRevisionNotFound warning. Upstream: rollback
    """
    rollback_to = get_rollback_to(d)
    assert rollback_to is not None
    new_rs, all_old_rss = await sync.get_all_replica_sets_and_sync_revision(dc, d, rs_list, True)
    all_rss = [*all_old_rss, new_rs]
    if rollback_to == 0:
        rollback_to = du.last_revision(all_rss)
        if rollback_to == 0:
            emit_rollback_warning_event(dc, d, du.ROLLBACK_REVISION_NOT_FOUND, "Unable to find last revision.")
            return await update_deployment_and_clear_rollback_to(dc, d)
    for rs in all_rss:
        if rs is None:
            continue
        try:
            v = du.revision(rs)
        except ValueError as err:
            log.debug("Unable to extract revision from deployment's replica set",
                      extra={"rs": rs.metadata.name, "err": str(err)})
            continue
        if v == rollback_to:
            # Copy the RS's template; its revision is bumped by the next sync's
            # get_all_replica_sets_and_sync_revision. A no-op if the templates match.
            performed_rollback = await rollback_to_template(dc, d, rs)
            if performed_rollback:
                emit_rollback_normal_event(
                    dc, d, f"Rolled back deployment {errors.go_quote(d.metadata.name)} to revision {rollback_to}")
            return
    emit_rollback_warning_event(dc, d, du.ROLLBACK_REVISION_NOT_FOUND, "Unable to find the revision to rollback to.")
    await update_deployment_and_clear_rollback_to(dc, d)


async def rollback_to_template(dc: DeploymentController, d: apps_v1.Deployment, rs: apps_v1.ReplicaSet) -> bool:
    """Give d the RS's template (and annotations) if they differ; clear the request either way.

    The annotations come back too: with RS1 {change-cause: create} and the current RS2
    {change-cause: edit}, rolling back to RS1 must make the Deployment (and so RS1 again)
    say "create", or RS1 would inherit "edit". Upstream: rollbackToTemplate
    """
    performed_rollback = False
    if not du.equal_ignore_hash(d.spec.template, rs.spec.template):
        log.debug("Rolling back deployment to old template spec", extra={"deployment": d.metadata.name})
        du.set_from_replica_set_template(d, rs.spec.template)
        du.set_deployment_annotations_to(d, rs)
        performed_rollback = True
    else:
        emit_rollback_warning_event(dc, d, du.ROLLBACK_TEMPLATE_UNCHANGED,
                                    f"The rollback revision contains the same template as current deployment "
                                    f"{errors.go_quote(d.metadata.name)}")
    await update_deployment_and_clear_rollback_to(dc, d)
    return performed_rollback


def emit_rollback_warning_event(dc: DeploymentController, d: apps_v1.Deployment, reason: str, message: str) -> None:
    """Upstream: emitRollbackWarningEvent"""
    dc.event_recorder.eventf(d, cu.EVENT_TYPE_WARNING, reason, message)


def emit_rollback_normal_event(dc: DeploymentController, d: apps_v1.Deployment, message: str) -> None:
    """Upstream: emitRollbackNormalEvent"""
    dc.event_recorder.eventf(d, cu.EVENT_TYPE_NORMAL, du.ROLLBACK_DONE, message)


async def update_deployment_and_clear_rollback_to(dc: DeploymentController, d: apps_v1.Deployment) -> None:
    """Remove the rollback request and update d (its template was set by the caller).

    Upstream: updateDeploymentAndClearRollbackTo
    """
    log.debug("Cleans up rollbackTo of deployment", extra={"deployment": d.metadata.name})
    set_rollback_to(d, None)
    await dc.client.apps_v1().deployments(d.metadata.namespace).update(d)


def get_rollback_to(d: apps_v1.Deployment) -> int | None:
    """The requested revision, or None (absent, empty or not a number). Upstream: getRollbackTo"""
    value = du.annotations_of(d).get(du.DEPRECATED_ROLLBACK_TO, "")
    if value == "":
        return None
    try:
        return du.parse_int64(value)
    except ValueError:
        return None                           # invalid: ignore it


def set_rollback_to(d: apps_v1.Deployment, rollback_to: int | None) -> None:
    """Upstream: setRollbackTo"""
    if rollback_to is None:
        if d.metadata.annotations:
            d.metadata.annotations.pop(du.DEPRECATED_ROLLBACK_TO, None)
        return
    d.metadata.annotations = {**(d.metadata.annotations or {}), du.DEPRECATED_ROLLBACK_TO: str(rollback_to)}
