"""Server-side printing: `meta.k8s.io/v1` Table responses for `kubectl get`.

kubectl get sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...` and prints the
columns the server chooses (spec/client-wire.md §2 "Table output"). Upstream's pieces:

* column definitions and row printers: pkg/printers/internalversion/printers.go
  (here `columns.py`, `printers.py`); resources without a printer get the apiserver's
  default NAME / CREATED AT table (k8s.io/apiserver/pkg/registry/rest/table.go);
* the server always prints wide (pkg/printers/storage.TableConvertor passes Wide: true):
  priority-1 cells are always present and kubectl hides them unless `-o wide`;
* `includeObject` (handlers/rest.go asTable): "Metadata" is the default (also for ""),
  and is what kubectl asks for implicitly; kubectl sends `includeObject=Object` only with
  `--sort-by`; "None" leaves `object` null;
* watch (handlers/watch.go, the Fixup closure): each event's object is a one-row Table;
  the FIRST event carries `columnDefinitions`, later ones have `columnDefinitions: null`
  ("on watch, we only want to print table headers on the first object"). kubectl reuses
  the last columns it saw when a Table has none. `WatchTables` keeps that state.
  Watch ERROR events carry a Status, not a Table.
"""
from __future__ import annotations

import time
from typing import Any

from kubeplane.api.errors import BadRequest, go_quote
from kubeplane.apiserver.tables.columns import column_definitions
from kubeplane.apiserver.tables.printers import print_default

__all__ = ["TABLE_API_VERSION", "WatchTables", "column_definitions", "to_table"]

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")


def _row_object(obj: dict[str, Any], include_object: str) -> dict[str, Any] | None:
    """The row's `object` as asTable builds it (handlers/rest.go)."""
    if include_object in ("Metadata", ""):
        return {"kind": "PartialObjectMetadata", "apiVersion": TABLE_API_VERSION,
                "metadata": obj.get("metadata") or {}}
    if include_object == "Object":
        return obj
    return None                                              # "None"


def _table_meta(objs: list[dict[str, Any]], list_meta: dict[str, Any] | None) -> dict[str, Any]:
    """ListMeta of the Table: the list's resourceVersion/continue/remainingItemCount, or,
    for a single object (GET or a watch event), that object's resourceVersion."""
    out: dict[str, Any] = {}
    if list_meta is not None:
        for key in ("resourceVersion", "continue"):
            if list_meta.get(key):
                out[key] = list_meta[key]
        if list_meta.get("remainingItemCount") is not None:
            out["remainingItemCount"] = list_meta["remainingItemCount"]
    elif len(objs) == 1 and (rv := (objs[0].get("metadata") or {}).get("resourceVersion")):
        out["resourceVersion"] = rv
    return out


def to_table(resource: str, group: str, objs: list[dict], *, include_object: str = "Metadata",
             now: float | None = None, list_meta: dict | None = None,
             no_headers: bool = False, version: str = "") -> dict:
    """A `meta.k8s.io/v1` Table for `objs` of `resource` (plural) in API `group`.

    `now` is epoch seconds for AGE columns (defaults to the wall clock; handlers should pass
    their clock's time). `list_meta` is the List's metadata for list requests; leave it None
    for one object. `no_headers` drops `columnDefinitions` (to null), as upstream's
    TableOptions.NoHeaders does for every watch event after the first. `version`: the
    requested one (a CRD's versions have their own columns); "" any.
    Raises BadRequest for an unknown `include_object`.

    Upstream: TableConvertor.ConvertToTable (pkg/printers/storage/storage.go) and asTable
    (k8s.io/apiserver/pkg/endpoints/handlers/rest.go)
    """
    if include_object not in INCLUDE_OBJECT_VALUES and include_object != "":
        # Checked before printing so an empty list still rejects a bad value, as upstream.
        raise BadRequest(f"unrecognized includeObject value: {go_quote(include_object)}")
    if now is None:
        now = time.time()
    from ..registry import REGISTRY
    d = (version and REGISTRY.lookup(group, version, resource)) or REGISTRY.for_resource(group, resource)
    printer = d.printer if d is not None else print_default
    rows = []
    for obj in objs:
        cells, conditions = printer(obj, now)
        row: dict[str, Any] = {"cells": cells}
        if conditions:
            row["conditions"] = [dict(c) for c in conditions]
        row["object"] = _row_object(obj, include_object)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": _table_meta(objs, list_meta),
        "columnDefinitions": None if no_headers else [dict(c) for c in
                                                      column_definitions(group, resource, version)],
        "rows": rows,
    }


class WatchTables:
    """Table form of one watch stream's events: column definitions on the first event only.

    Upstream: the Fixup closure in serveWatchHandler (handlers/watch.go) flips
    TableOptions.NoHeaders to true after transforming the first object.
    """

    def __init__(self, resource: str, group: str, *, include_object: str = "Metadata", version: str = "") -> None:
        self.resource, self.group, self.include_object, self.version = resource, group, include_object, version
        self._headers_sent = False

    def table(self, obj: dict, *, now: float | None = None) -> dict:
        """The one-row Table to put in a watch event's `object`."""
        t = to_table(self.resource, self.group, [obj], include_object=self.include_object,
                     now=now, no_headers=self._headers_sent, version=self.version)
        self._headers_sent = True
        return t
