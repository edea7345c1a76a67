"""Conversions on the way in and out of the API server: the two Event APIs, and a Secret's stringData.

## core/v1 Event and events.k8s.io/v1 Event

Both APIs serve the same objects from one storage prefix (/registry/events/), as upstream;
the stored form is core/v1. A request on /apis/events.k8s.io/v1 converts on the way in
(`event_events_v1_to_core`) and on the way out (`event_core_to_events_v1`).

Field mapping (upstream pkg/apis/events/v1/conversion.go plus the generated autoConvert):

    core/v1                  events.k8s.io/v1
    involvedObject      <->  regarding
    message             <->  note
    source              <->  deprecatedSource
    firstTimestamp      <->  deprecatedFirstTimestamp
    lastTimestamp       <->  deprecatedLastTimestamp
    count               <->  deprecatedCount
    reportingComponent  <->  reportingController      (same Go field, different JSON names)
    metadata, reason, type, action, related, eventTime, series, reportingInstance: same name

Outputs have the shape upstream's JSON encoder gives: struct-typed fields are always present
(`regarding: {}`, `source: {}`), zero timestamps are `null` (Go's omitempty never omits a
struct, and a zero metav1.Time marshals as null), zero ints and empty strings tagged
omitempty are left out, and core/v1's `reportingComponent`/`reportingInstance` (tagged
without omitempty) are always present, "" when unset. Inputs may be sparse.

## Secret
A v1 Secret's `stringData` is write-only: conversion to the internal (stored) form merges it
into `data`, overwriting keys present in both, and drops it (secret_v1_to_core).
"""
from __future__ import annotations

import base64
from typing import Any

CORE_API_VERSION = "v1"
EVENTS_API_VERSION = "events.k8s.io/v1"


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    """Set `key` unless `value` is a zero value that Go's omitempty would leave out."""
    if value:
        out[key] = value


def _core_series(series: dict[str, Any] | None) -> dict[str, Any] | None:
    """core/v1 EventSeries: count and lastObservedTime both omitempty (null when zero)."""
    if series is None:
        return None
    out: dict[str, Any] = {}
    _put(out, "count", series.get("count"))
    out["lastObservedTime"] = series.get("lastObservedTime") or None
    return out


def _events_series(series: dict[str, Any] | None) -> dict[str, Any] | None:
    """events.k8s.io/v1 EventSeries: count and lastObservedTime are required, never omitted."""
    if series is None:
        return None
    return {"count": series.get("count") or 0,
            "lastObservedTime": series.get("lastObservedTime") or None}


def event_core_to_events_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A core/v1 Event as an events.k8s.io/v1 Event.

    Upstream: Convert_core_Event_To_v1_Event (pkg/apis/events/v1/conversion.go)
    """
    out: dict[str, Any] = {"kind": "Event", "apiVersion": EVENTS_API_VERSION,
                           "metadata": obj.get("metadata") or {},
                           "eventTime": obj.get("eventTime") or None}
    if (series := _events_series(obj.get("series"))) is not None:
        out["series"] = series
    _put(out, "reportingController", obj.get("reportingComponent"))
    _put(out, "reportingInstance", obj.get("reportingInstance"))
    _put(out, "action", obj.get("action"))
    _put(out, "reason", obj.get("reason"))
    out["regarding"] = obj.get("involvedObject") or {}
    if obj.get("related") is not None:
        out["related"] = obj["related"]
    _put(out, "note", obj.get("message"))
    _put(out, "type", obj.get("type"))
    out["deprecatedSource"] = obj.get("source") or {}
    out["deprecatedFirstTimestamp"] = obj.get("firstTimestamp") or None
    out["deprecatedLastTimestamp"] = obj.get("lastTimestamp") or None
    _put(out, "deprecatedCount", obj.get("count"))
    return out


def event_events_v1_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as a core/v1 Event (the stored form).

    Upstream: Convert_v1_Event_To_core_Event (pkg/apis/events/v1/conversion.go)
    """
    out: dict[str, Any] = {"kind": "Event", "apiVersion": CORE_API_VERSION,
                           "metadata": obj.get("metadata") or {},
                           "involvedObject": obj.get("regarding") or {}}
    _put(out, "reason", obj.get("reason"))
    _put(out, "message", obj.get("note"))
    out["source"] = obj.get("deprecatedSource") or {}
    out["firstTimestamp"] = obj.get("deprecatedFirstTimestamp") or None
    out["lastTimestamp"] = obj.get("deprecatedLastTimestamp") or None
    _put(out, "count", obj.get("deprecatedCount"))
    _put(out, "type", obj.get("type"))
    out["eventTime"] = obj.get("eventTime") or None
    if (series := _core_series(obj.get("series"))) is not None:
        out["series"] = series
    _put(out, "action", obj.get("action"))
    if obj.get("related") is not None:
        out["related"] = obj["related"]
    out["reportingComponent"] = obj.get("reportingController") or ""
    out["reportingInstance"] = obj.get("reportingInstance") or ""
    return out


def secret_v1_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    """The Secret with its stringData merged into data (each value as its UTF-8 bytes, in
    base64 as data holds it) and removed: stringData is never stored nor returned.

    Upstream: Convert_v1_Secret_To_core_Secret (pkg/apis/core/v1/conversion.go):
    "StringData overwrites Data".
    """
    string_data = obj.pop("stringData", None)
    if string_data:
        data = obj.get("data") or {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data
    return obj
