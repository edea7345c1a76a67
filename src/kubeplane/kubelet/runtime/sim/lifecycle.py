"""The stage engine: which stage applies to an object, after how long, and what it does.

A Stage is kwok's (kwok.x-k8s.io/v1alpha1 Stage), read from YAML:

    kind: Stage
    metadata: {name: container-start}
    spec:
      resourceRef: {apiGroup: sim.kubeplane.io, kind: Container}
      selector:
        matchExpressions:
        - {key: .status.state, operator: In, values: [Creating]}
      weight: 1                                   # among several matching stages
      delay: {durationMilliseconds: 100, jitterDurationMilliseconds: 300}
      next:
        statusTemplate: |
          state: Running
          startedAt: {{ Now | Quote }}
        event: {type: Normal, reason: Started, message: Started container {{ .metadata.name }}}
        finalizers: {add: [{value: x}], remove: [{value: y}], empty: false}
        delete: false
      immediateNextStage: true

Semantics (kwok's):
* A stage matches an object when resourceRef names its kind (apiGroup may be the group or
  the whole apiVersion, as kwok's `apiGroup: v1` for pods) and the selector matches.
* Among matching stages one is chosen at random by weight (weightFrom.expressionFrom may
  read the weight off the object); when no matching stage has a weight the first wins.
* The delay is durationMilliseconds, or jitterDurationMilliseconds as the latest time:
  the wait is uniform in [duration, jitter] when jitter > duration. durationFrom /
  jitterDurationFrom read a duration ("1.5s", "300ms") or a timestamp (wait until then)
  off the object, and win over the fixed numbers when present.
* Applying `next`: the rendered statusTemplate is merged into .status as a JSON merge
  patch (RFC 7386: maps merge, null removes, anything else replaces), finalizers are
  edited, an event is emitted, and delete removes the object.
* immediateNextStage: the next matching stage is applied at once, before the change is
  reported to anyone (intermediate states are never seen).

Write each selector so that the stage's own effect makes it stop matching; a stage that
keeps matching after it applied would fire forever. `run_stages` stops after 100 steps.
"""
from __future__ import annotations

import copy
import pathlib
import datetime as dt
import random
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Iterable

import yaml

# libyaml's safe loader when PyYAML was built with it (10x faster; every stage change parses
# its rendered status template), else the pure-Python one. Both are safe loaders.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

from .expression import ExpressionError, Query, Selector, jq_string
from .renderer import Helper, Renderer

STAGES_PACKAGE = "kubeplane.kubelet.stages"
MAX_STEPS = 100


@dataclass(frozen=True)
class Delay:
    duration_ms: int = 0
    jitter_ms: int | None = None
    duration_from: Query | None = None
    jitter_from: Query | None = None

    def bounds(self, obj: Any, now: float) -> tuple[float, float]:
        """(earliest, latest) wait in seconds for obj at wall-clock time now.

        Example: durationMilliseconds 1000, jitterDurationMilliseconds 5000 -> (1.0, 5.0);
        durationFrom pointing at a deletionTimestamp 30 s ahead of now -> (30.0, 30.0).
        """
        lo = _seconds_from(self.duration_from, obj, now)
        lo = self.duration_ms / 1000 if lo is None else lo
        hi = _seconds_from(self.jitter_from, obj, now)
        hi = (self.jitter_ms / 1000 if self.jitter_ms is not None else lo) if hi is None else hi
        return lo, max(lo, hi)

    def pick(self, obj: Any, now: float, rng: random.Random) -> float:
        lo, hi = self.bounds(obj, now)
        return lo if hi <= lo else rng.uniform(lo, hi)


@dataclass(frozen=True)
class EventSpec:
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Next:
    status_template: str | None = None
    delete: bool = False
    event: EventSpec | None = None
    finalizers_add: tuple[str, ...] = ()
    finalizers_remove: tuple[str, ...] = ()
    finalizers_empty: bool = False


@dataclass(frozen=True)
class Stage:
    name: str
    api_group: str
    kind: str
    selector: Selector
    delay: Delay = Delay()
    next: Next = Next()
    weight: int = 0
    weight_from: Query | None = None
    immediate_next_stage: bool = False

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Stage:
        """Build a Stage from its YAML document; ValueError on anything malformed."""
        if d.get("kind") != "Stage":
            raise ValueError(f"not a Stage: kind={d.get('kind')!r}")
        name = (d.get("metadata") or {}).get("name") or ""
        spec = d.get("spec") or {}
        ref = spec.get("resourceRef") or {}
        try:
            return cls(name=name, api_group=ref.get("apiGroup", ""), kind=ref["kind"],
                       selector=Selector.from_dict(spec.get("selector")), delay=_delay(spec.get("delay")),
                       next=_next(spec.get("next")), weight=int(spec.get("weight") or 0),
                       weight_from=_from(spec.get("weightFrom")),
                       immediate_next_stage=bool(spec.get("immediateNextStage")))
        except (KeyError, TypeError, ExpressionError) as e:
            raise ValueError(f"stage {name!r}: {e}") from e

    def applies_to(self, obj: dict[str, Any]) -> bool:
        if obj.get("kind") != self.kind:
            return False
        api_version = obj.get("apiVersion") or ""
        return self.api_group in (api_version, api_version.rpartition("/")[0])

    def matches(self, obj: dict[str, Any]) -> bool:
        return self.applies_to(obj) and self.selector.matches(obj)

    def weight_of(self, obj: Any) -> int:
        if self.weight_from is not None:
            values = [v for v in self.weight_from.execute(obj) if v is not None]
            if values:
                try:
                    return int(jq_string(values[0]))
                except ValueError:
                    pass
        return self.weight


def _from(d: dict[str, Any] | None) -> Query | None:
    return Query.parse(d["expressionFrom"]) if d and d.get("expressionFrom") else None


def _delay(d: dict[str, Any] | None) -> Delay:
    d = d or {}
    jitter = d.get("jitterDurationMilliseconds")
    return Delay(int(d.get("durationMilliseconds") or 0), int(jitter) if jitter is not None else None,
                 _from(d.get("durationFrom")), _from(d.get("jitterDurationFrom")))


def _next(d: dict[str, Any] | None) -> Next:
    d = d or {}
    ev = d.get("event")
    fin = d.get("finalizers") or {}
    return Next(status_template=d.get("statusTemplate"), delete=bool(d.get("delete")),
                event=EventSpec(ev.get("type", "Normal"), ev["reason"], ev.get("message", "")) if ev else None,
                finalizers_add=tuple(f["value"] for f in fin.get("add") or ()),
                finalizers_remove=tuple(f["value"] for f in fin.get("remove") or ()),
                finalizers_empty=bool(fin.get("empty")))


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(s: str) -> float | None:
    """Go's time.ParseDuration for the common units ("1m30s", "250ms") -> seconds; None if not one."""
    s = s.strip()
    parts = _DURATION.findall(s)
    if not parts or "".join(n + u for n, u in parts) != s:
        return None
    return sum(float(n) * _UNIT[u] for n, u in parts)


def _seconds_from(q: Query | None, obj: Any, now: float) -> float | None:
    if q is None:
        return None
    for v in q.execute(obj):
        if v is None:
            continue
        text = jq_string(v)
        secs = parse_duration(text)
        if secs is not None:
            return secs
        try:
            t = dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        return max(0.0, t - now)
    return None


# --- applying a stage ------------------------------------------------------------------------

@dataclass
class Outcome:
    """What applying one stage did: the new object (None once deleted) and its event."""

    obj: dict[str, Any] | None
    event: EventSpec | None = None


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch of patch onto target (target is not modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def apply_stage(stage: Stage, obj: dict[str, Any], renderer: Renderer,
                helpers: dict[str, Helper] | None = None) -> Outcome:
    """Apply stage.next to a copy of obj. Upstream: kwok StageController / lifecycle.Next."""
    nxt = stage.next
    new = copy.deepcopy(obj)
    if nxt.status_template:
        rendered = yaml.load(renderer.render(nxt.status_template, obj, helpers), Loader=_SAFE_LOADER) or {}
        if not isinstance(rendered, dict):
            raise ValueError(f"stage {stage.name!r}: statusTemplate did not render a map")
        new["status"] = merge_patch(new.get("status") or {}, rendered)
    _edit_finalizers(new, nxt)
    event = None
    if nxt.event is not None:
        event = EventSpec(nxt.event.type, nxt.event.reason, renderer.render(nxt.event.message, obj, helpers))
    return Outcome(None if nxt.delete else new, event)


def _edit_finalizers(obj: dict[str, Any], nxt: Next) -> None:
    if not (nxt.finalizers_add or nxt.finalizers_remove or nxt.finalizers_empty):
        return
    meta = obj.setdefault("metadata", {})
    fins = [] if nxt.finalizers_empty else list(meta.get("finalizers") or [])
    fins = [f for f in fins if f not in nxt.finalizers_remove]
    fins += [f for f in nxt.finalizers_add if f not in fins]
    if fins:
        meta["finalizers"] = fins
    else:
        meta.pop("finalizers", None)


# --- a set of stages -------------------------------------------------------------------------

@dataclass
class Lifecycle:
    """The stages of a profile; picks the stage for an object."""

    stages: list[Stage]
    rng: random.Random = field(default_factory=random.Random)

    def match(self, obj: dict[str, Any]) -> list[Stage]:
        return [s for s in self.stages if s.matches(obj)]

    def select(self, obj: dict[str, Any]) -> Stage | None:
        """The stage to apply next: weighted random among matches, else the first match."""
        matched = self.match(obj)
        if not matched:
            return None
        weights = [s.weight_of(obj) for s in matched]
        if sum(weights) <= 0:
            return matched[0]
        return self.rng.choices(matched, weights=weights)[0]


def load_stages(docs: Iterable[dict[str, Any]]) -> list[Stage]:
    return [Stage.from_dict(d) for d in docs if d]


def profiles() -> list[str]:
    """Names of the stage profiles shipped in kubeplane/kubelet/stages/."""
    root = resources.files(STAGES_PACKAGE)
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_"))


def load_profile(profile: str) -> list[Stage]:
    """The stages of a profile: stages/_common/*.yaml then stages/<profile>/*.yaml, each in
    file-name order. profile may also be a directory of YAML files (used on its own).
    ValueError for an unknown profile or a malformed stage.
    """
    path = pathlib.Path(profile)
    if path.is_dir():
        return _load_dir(path)
    if profile not in profiles():
        raise ValueError(f"unknown stage profile {profile!r}; have {profiles()}")
    root = resources.files(STAGES_PACKAGE)
    return _load_dir(root.joinpath("_common")) + _load_dir(root.joinpath(profile))


def _load_dir(root: Any) -> list[Stage]:
    files = sorted((p for p in root.iterdir() if p.name.endswith((".yaml", ".yml"))), key=lambda p: p.name)
    return [s for p in files for s in load_stages(yaml.safe_load_all(p.read_text()))]


def run_stages(lifecycle: Lifecycle, obj: dict[str, Any], renderer: Renderer, *,
               now: Callable[[], float], advance: Callable[[float], None],
               helpers: dict[str, Helper] | None = None) -> list[dict[str, Any]]:
    """Drive obj through stages until none matches (or it is deleted); returns the trace.

    Each step waits the stage's earliest delay (advance moves the caller's clock) and
    records {stage, delay: [lo, hi], event?}; the last entry holds the final object.
    Used by the golden tests and handy for trying a profile out.
    """
    trace: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = obj
    for _ in range(MAX_STEPS):
        stage = lifecycle.select(cur) if cur is not None else None
        if stage is None:
            break
        lo, hi = stage.delay.bounds(cur, now())
        advance(lo)
        out = apply_stage(stage, cur, renderer, helpers)
        step: dict[str, Any] = {"stage": stage.name, "delay": [lo, hi]}
        if out.event is not None:
            step["event"] = {"type": out.event.type, "reason": out.event.reason, "message": out.event.message}
        if out.obj is None:
            step["deleted"] = True
        trace.append(step)
        cur = out.obj
    else:
        raise RuntimeError(f"stages did not settle after {MAX_STEPS} steps (a selector keeps matching)")
    trace.append({"final": cur})
    return trace
