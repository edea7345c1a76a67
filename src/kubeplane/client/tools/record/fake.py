"""A recorder for controller unit tests: events become strings in a list.

    recorder = FakeRecorder()
    dc = DeploymentController(..., recorder=recorder)
    ...
    assert recorder.events == ["Normal ScalingReplicaSet Scaled up replica set web-5d9 to 3"]

Upstream: FakeRecorder, client-go tools/record/fake.go (a channel there, a list here).
"""
from __future__ import annotations

from typing import Any

from .util import get_reference, sprintf


class FakeRecorder:
    """Records "<type> <reason> <message>" per event, nothing else.

    With include_object the involved object is appended as
    " involvedObject{kind=Deployment,apiVersion=apps/v1}"; annotations are appended as
    Go prints a map (" map[a:b]").
    Upstream: FakeRecorder, tools/record/fake.go
    """

    def __init__(self, include_object: bool = False) -> None:
        self.events: list[str] = []
        self.include_object = include_object

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self._write_event(obj, None, f"{type_} {reason} {message}")

    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None:
        # Upstream formats type+" "+reason+" "+fmt as one format string; same result
        # unless type or reason contains a verb, which they never do.
        self._write_event(obj, None, f"{type_} {reason} {sprintf(fmt, *args)}")

    def annotated_eventf(self, obj: Any, annotations: dict[str, str], type_: str, reason: str,
                         fmt: str, *args: Any) -> None:
        self._write_event(obj, annotations, f"{type_} {reason} {sprintf(fmt, *args)}")

    def _write_event(self, obj: Any, annotations: dict[str, str] | None, text: str) -> None:
        self.events.append(text + self._object_string(obj) + _annotations_string(annotations))

    def _object_string(self, obj: Any) -> str:
        if not self.include_object:
            return ""
        try:
            ref = get_reference(obj)
        except ValueError:
            return " involvedObject{kind=,apiVersion=}"
        return f" involvedObject{{kind={ref.kind},apiVersion={ref.api_version}}}"


def _annotations_string(annotations: dict[str, str] | None) -> str:
    if not annotations:
        return ""
    return " map[" + " ".join(f"{k}:{v}" for k, v in sorted(annotations.items())) + "]"
