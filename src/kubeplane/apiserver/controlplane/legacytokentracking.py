"""Legacy token tracking: the ConfigMap kube-system/kube-apiserver-legacy-service-account-token-tracking
holds the day (`since`) from which this cluster labels legacy service account token Secrets
with the day they were last used. The legacy token cleaner trusts a missing last-used label only
for Secrets older than that day plus its clean-up period.

The API server creates the ConfigMap when it is missing and rewrites a `since` that is not a
date, at start and then every minute (upstream reacts to the ConfigMap's informer; a minute is
ample for a value read once a day).

Upstream: pkg/controlplane/controller/legacytokentracking/controller.go (ConfigMapName,
ConfigMapDataKey, syncConfigMap).
"""
from __future__ import annotations

import copy
import datetime as dt
import logging
from typing import TYPE_CHECKING

from ...api import errors
from ...api.resources import lookup
from ..authentication.user import APISERVER
from ..registry import store

if TYPE_CHECKING:
    from ..server import APIServer

log = logging.getLogger(__name__)

CONFIG_MAP_NAME = "kube-apiserver-legacy-service-account-token-tracking"
CONFIG_MAP_DATA_KEY = "since"
DATE_FORMAT = "%Y-%m-%d"
RESYNC = 60.0


def today(api: APIServer) -> str:
    return dt.datetime.fromtimestamp(api.clock.now(), dt.UTC).strftime(DATE_FORMAT)


def is_date(value: str) -> bool:
    """Go's time.Parse("2006-01-02", value)."""
    try:
        return len(value) == 10 and dt.datetime.strptime(value, DATE_FORMAT) is not None
    except ValueError:
        return False


async def sync_config_map(api: APIServer) -> None:
    """Upstream: Controller.syncConfigMap"""
    ri = lookup("", "v1", "configmaps")
    assert ri is not None
    opts = store.WriteOptions(user=APISERVER, user_agent="kube-apiserver")
    kv = await api.storage.get(ri.key("kube-system", CONFIG_MAP_NAME))
    if kv is None:
        await store.create(api, opts, ri, "kube-system", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG_MAP_NAME, "namespace": "kube-system"},
            "data": {CONFIG_MAP_DATA_KEY: today(api)}}, [])
    elif not is_date(str((kv.obj.get("data") or {}).get(CONFIG_MAP_DATA_KEY, ""))):
        new = copy.deepcopy(kv.obj)
        new.setdefault("data", {})[CONFIG_MAP_DATA_KEY] = today(api)
        await store.update(api, opts, ri, new, kv.obj, kv.mod_revision, "", [])


async def run(api: APIServer) -> None:
    """Keep the ConfigMap there until cancelled."""
    while True:
        try:
            await sync_config_map(api)
        except errors.StatusError as err:          # e.g. a concurrent writer: the next round settles it
            log.warning("Error syncing legacy token tracking ConfigMap: %s", err)
        await api.clock.sleep(RESYNC)
