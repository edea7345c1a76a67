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
import functools
import pathlib
import datetime as dt
import random
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Iterable

import yaml

from .expression import ExpressionError, Query, Selector, jq_string
from .renderer import Helper, Renderer

# libyaml's safe loader when PyYAML was built with it (10x faster; every stage change parses
# its rendered status template), else the pure-Python one. Both are safe loaders.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

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


_SCALARS = (str, int, float, bool, type(None))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch of patch onto target (target is not modified)."""
    if not isinstance(patch, dict):
        return patch if isinstance(patch, _SCALARS) else copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def apply_stage(stage: Stage, obj: dict[str, Any], renderer: Renderer,
                helpers: dict[str, Helper] | None = None) -> Outcome:
    """Apply stage.next to a copy of obj. Upstream: kwok StageController / lifecycle.Next.

    obj is not modified. The copy is shallow where nothing changes: .status (and
    .metadata when finalizers are edited) are new dicts, the rest is shared with obj, so
    copy a part before changing it in place.
    """
    nxt = stage.next
    new = dict(obj)
    if nxt.status_template:
        rendered = parse_status(renderer.render(nxt.status_template, obj, helpers))
        if not isinstance(rendered, dict):
            raise ValueError(f"stage {stage.name!r}: statusTemplate did not render a map")
        new["status"] = merge_patch(obj.get("status") or {}, rendered)
    _edit_finalizers(new, nxt)
    event = None
    if nxt.event is not None:
        event = EventSpec(nxt.event.type, nxt.event.reason, renderer.render(nxt.event.message, obj, helpers))
    return Outcome(None if nxt.delete else new, event)


_PARSED: dict[str, Any] = {}
_PARSED_MAX = 4096


def parse_status(text: str) -> Any:
    """A rendered statusTemplate read as YAML ({} when empty). Most renders repeat (same
    image, same second), so results are kept by text; callers must not modify them
    (merge_patch copies what it takes)."""
    out = _PARSED.get(text)
    if out is None:
        out = _parse_flat(text)
        if out is None:
            out = yaml.load(text, Loader=_SAFE_LOADER) or {}
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = out
    return out


# `key: "printable ASCII"` or `key: plain-token`, one per line: what the shipped templates
# render (`podIP: "10.244.3.7"`, `state: Running`). Anything else goes to the YAML parser.
_FLAT_LINE = re.compile(r'([A-Za-z][A-Za-z0-9_]*): (?:"([ !#-\[\]-~]*)"|([A-Za-z0-9][A-Za-z0-9_.-]*))')


def _parse_flat(text: str) -> dict[Any, Any] | None:
    """A flat mapping read as YAML would read it, or None when text is not that simple.

    A double-quoted scalar without escapes is its text; a plain key or value resolves as
    YAML alone resolves it ("0" -> 0, "true" -> True, "Running" -> "Running").
    """
    out: dict[Any, Any] = {}
    for line in text.split("\n"):
        if not line:
            continue
        m = _FLAT_LINE.fullmatch(line)
        if m is None:
            return None
        key, quoted, plain = m.groups()
        out[_plain_scalar(key)] = quoted if quoted is not None else _plain_scalar(plain)
    return out or None


@functools.lru_cache(maxsize=1024)
def _plain_scalar(token: str) -> Any:
    return yaml.load(token, Loader=_SAFE_LOADER)


def _edit_finalizers(obj: dict[str, Any], nxt: Next) -> None:
    if not (nxt.finalizers_add or nxt.finalizers_remove or nxt.finalizers_empty):
        return
    meta = obj["metadata"] = dict(obj.get("metadata") or {})     # obj's metadata may be shared
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

    def __post_init__(self) -> None:
        # Stages are fixed once the Lifecycle is built, so which stages can match an object
        # is worked out once per (kind, apiVersion, value of the discriminating path): the
        # plain path most stages require `In` some values (".status.state" in the shipped
        # profiles). A stage requiring `.status.state In [Created]` is never a candidate
        # for a Running container; one without such a requirement always is.
        self._weighted = any(s.weight > 0 or s.weight_from is not None for s in self.stages)
        self._key = _discriminator(self.stages)
        self._by_ref: dict[tuple[Any, Any], tuple[Stage, ...]] = {}
        self._by_value: dict[tuple[Any, Any, str | None], tuple[Stage, ...]] = {}

    def _candidates(self, obj: dict[str, Any]) -> tuple[Stage, ...]:
        ref = (obj.get("kind"), obj.get("apiVersion"))
        found = self._by_ref.get(ref)
        if found is None:
            found = self._by_ref[ref] = tuple(s for s in self.stages if s.applies_to(obj))
        if self._key is None:
            return found
        v = self._key.first(obj)
        text = jq_string(v) if v is not None else None
        key = (*ref, text)
        narrowed = self._by_value.get(key)
        if narrowed is None:
            narrowed = tuple(s for s in found if _admits(s, self._key.source, text))
            if len(self._by_value) < 256:          # values come from objects: keep the table bounded
                self._by_value[key] = narrowed
        return narrowed

    def match(self, obj: dict[str, Any]) -> list[Stage]:
        return [s for s in self._candidates(obj) if s.selector.matches(obj)]

    def select(self, obj: dict[str, Any]) -> Stage | None:
        """The stage to apply next: weighted random among matches, else the first match."""
        if not self._weighted:            # every weight is 0: the first match, no random draw
            for s in self._candidates(obj):
                if s.selector.matches(obj):
                    return s
            return None
        matched = self.match(obj)
        if not matched:
            return None
        weights = [s.weight_of(obj) for s in matched]
        if sum(weights) <= 0:
            return matched[0]
        return self.rng.choices(matched, weights=weights)[0]


def _in_requirements(s: Stage) -> list[Any]:
    return [r for r in s.selector.match_expressions if r.operator == "In" and r.query.fields is not None]


def _discriminator(stages: list[Stage]) -> Query | None:
    """The plain path that the most stages require `In` some values (None if none does)."""
    counts: dict[str, int] = {}
    queries: dict[str, Query] = {}
    for s in stages:
        for r in _in_requirements(s):
            if r.key not in counts:
                counts[r.key], queries[r.key] = 0, r.query
            counts[r.key] += 1
    if not counts:
        return None
    return queries[max(counts, key=lambda k: counts[k])]     # max keeps the first of equals


def _admits(s: Stage, source: str, text: str | None) -> bool:
    """Whether s can match an object whose value at path source prints as text (None: absent)."""
    return all(text is not None and text in r.values for r in _in_requirements(s) if r.query.source == source)


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
    return list(_shipped_profile(profile))


@functools.cache
def _shipped_profile(profile: str) -> tuple[Stage, ...]:
    """A shipped profile's stages, parsed once per process (`up` checks the profile before it
    starts anything, and its kubelet then loads the same one)."""
    if profile not in profiles():
        raise ValueError(f"unknown stage profile {profile!r}; have {profiles()}")
    root = resources.files(STAGES_PACKAGE)
    return tuple(_load_dir(root.joinpath("_common")) + _load_dir(root.joinpath(profile)))


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
