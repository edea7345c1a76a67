"""The evaluator: which check functions run for a level and version, and their aggregate result.

Every policy version from v1.0 to the newest a check names gets its own ordered list of
functions, built once: baseline checks first, then restricted ones, each group sorted by ID
(so messages come out in upstream's order); a restricted level includes the baseline checks
its restricted checks do not override. A version newer than the newest, and `latest`, use
the newest list. Upstream: checkRegistry, NewEvaluator, populate, inflateVersions
(policy/registry.go); AggregateCheckResults (policy/checks.go).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .api import BASELINE, PRIVILEGED, LevelVersion, Version, v1
from .check import Check, CheckPodFn, Forbidden, Obj, VersionedCheck
from .checks_baseline import BASELINE_CHECKS
from .checks_restricted import RESTRICTED_CHECKS

UNKNOWN_FORBIDDEN_REASON = "unknown forbidden reason"


@dataclass(frozen=True, slots=True)
class AggregateCheckResult:
    """Upstream: AggregateCheckResult."""
    forbidden: tuple[Forbidden, ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.forbidden

    def forbidden_reason(self) -> str:
        """`host ports, privileged containers`: the reasons only (namespace warnings)."""
        return ", ".join(f.reason for f in self.forbidden)

    def forbidden_detail(self) -> str:
        """`privileged (container "a" must not ...), host namespaces (hostPID=true)`."""
        return ", ".join(f"{f.reason} ({f.detail})" if f.detail else f.reason for f in self.forbidden)


ALLOWED = AggregateCheckResult()


class Evaluator:
    """Upstream: checkRegistry."""

    def __init__(self, checks: Iterable[Check] = BASELINE_CHECKS + RESTRICTED_CHECKS,
                 emulation_version: Version | None = None) -> None:
        checks = tuple(checks)
        self.max_version = v1(0)
        for c in checks:
            last = c.versions[-1].minimum_version
            if self.max_version.older(last):
                self.max_version = last
        self.baseline: dict[Version, tuple[CheckPodFn, ...]] = {}
        self.restricted: dict[Version, tuple[CheckPodFn, ...]] = {}
        self._populate(checks)
        if emulation_version is not None and emulation_version.older(self.max_version):
            self.max_version = emulation_version

    def _populate(self, checks: tuple[Check, ...]) -> None:
        baseline_ids = sorted(c.id for c in checks if c.level == BASELINE)
        restricted_ids = sorted(c.id for c in checks if c.level != BASELINE)
        ordered_ids = baseline_ids + restricted_ids
        by_version: dict[str, dict[Version, dict[str, VersionedCheck]]] = {BASELINE: {}, "restricted": {}}
        for c in checks:
            level = BASELINE if c.level == BASELINE else "restricted"
            self._inflate(c, by_version[level])
        v = v1(0)
        while v.older(self.max_version.next_minor()):
            base = by_version[BASELINE].get(v, {})
            restricted = dict(by_version["restricted"].get(v, {}))
            overridden = {o for vc in restricted.values() for o in vc.override_check_ids}
            restricted.update({cid: vc for cid, vc in base.items() if cid not in overridden})
            self.baseline[v] = tuple(base[i].check_pod for i in ordered_ids if i in base)
            self.restricted[v] = tuple(restricted[i].check_pod for i in ordered_ids if i in restricted)
            v = v.next_minor()

    def _inflate(self, check: Check, versions: dict[Version, dict[str, VersionedCheck]]) -> None:
        """Each version of the check applies from its minimum version up to the next one's."""
        for i, vc in enumerate(check.versions):
            stop = (check.versions[i + 1].minimum_version if i + 1 < len(check.versions)
                    else self.max_version.next_minor())
            v = vc.minimum_version
            while v.older(stop):
                versions.setdefault(v, {})[check.id] = vc
                v = v.next_minor()

    def checks_for(self, lv: LevelVersion) -> tuple[CheckPodFn, ...]:
        if lv.level == PRIVILEGED:
            return ()
        version = self.max_version if self.max_version.older(lv.version) else lv.version
        table = self.baseline if lv.level == BASELINE else self.restricted
        return table.get(version, ())

    def evaluate_pod(self, lv: LevelVersion, meta: Obj, spec: Obj) -> AggregateCheckResult:
        """Run the level's checks. Upstream: EvaluatePod + AggregateCheckResults."""
        forbidden = []
        for check in self.checks_for(lv):
            result = check(meta, spec)
            if result is not None:
                forbidden.append(result if result.reason else Forbidden(UNKNOWN_FORBIDDEN_REASON, result.detail))
        return AggregateCheckResult(tuple(forbidden)) if forbidden else ALLOWED


DEFAULT_EVALUATOR = Evaluator()
