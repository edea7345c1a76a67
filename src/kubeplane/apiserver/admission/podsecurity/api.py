"""Levels, versions, and the policy a namespace's labels ask for.

Upstream: k8s.io/pod-security-admission/api (constants.go, helpers.go): Level, Version,
LevelVersion, Policy, ParseLevel, ParseVersion, PolicyToEvaluate, CompareLevels.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from ....api import errors

PRIVILEGED = "privileged"
BASELINE = "baseline"
RESTRICTED = "restricted"
VALID_LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
_STRICTNESS = {PRIVILEGED: 0, BASELINE: 1, RESTRICTED: 2}

VERSION_LATEST = "latest"

LABEL_PREFIX = "pod-security.kubernetes.io/"
AUDIT_ANNOTATION_PREFIX = LABEL_PREFIX
ENFORCE_LEVEL_LABEL = LABEL_PREFIX + "enforce"
ENFORCE_VERSION_LABEL = LABEL_PREFIX + "enforce-version"
AUDIT_LEVEL_LABEL = LABEL_PREFIX + "audit"
AUDIT_VERSION_LABEL = LABEL_PREFIX + "audit-version"
WARN_LEVEL_LABEL = LABEL_PREFIX + "warn"
WARN_VERSION_LABEL = LABEL_PREFIX + "warn-version"

# Audit annotations: upstream's keys (ExemptionReasonAnnotationKey, …) with the prefix the
# plugin adds when it records them.
EXEMPTION_REASON_ANNOTATION = AUDIT_ANNOTATION_PREFIX + "exempt"
AUDIT_VIOLATIONS_ANNOTATION = AUDIT_ANNOTATION_PREFIX + "audit-violations"
ENFORCED_POLICY_ANNOTATION = AUDIT_ANNOTATION_PREFIX + "enforce-policy"
ERROR_ANNOTATION = AUDIT_ANNOTATION_PREFIX + "error"

_VERSION_RE = re.compile(r"v1\.([0-9]|[1-9][0-9]*)")
_LEVEL_ERROR = "must be one of " + ", ".join(VALID_LEVELS)
_VERSION_ERROR = 'must be "latest" or "v1.x"'


@dataclass(frozen=True, slots=True, order=False)
class Version:
    """A policy version: v<major>.<minor>, or latest (newer than every numbered version)."""
    major: int = 0
    minor: int = 0
    latest: bool = False

    def __str__(self) -> str:
        return VERSION_LATEST if self.latest else f"v{self.major}.{self.minor}"

    def older(self, other: Version) -> bool:
        """Upstream: Version.Older."""
        if self.latest:
            return False
        if other.latest:
            return True
        return (self.major, self.minor) < (other.major, other.minor)

    def next_minor(self) -> Version:
        return self if self.latest else Version(self.major, self.minor + 1)


LATEST = Version(latest=True)


def v1(minor: int) -> Version:
    return Version(1, minor)


@dataclass(frozen=True, slots=True)
class LevelVersion:
    level: str
    version: Version

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"

    def equivalent(self, other: LevelVersion) -> bool:
        """Both privileged (whatever the versions), or the same level and version."""
        return (self.level == PRIVILEGED and other.level == PRIVILEGED) or self == other


PRIVILEGED_LATEST = LevelVersion(PRIVILEGED, LATEST)


@dataclass(frozen=True, slots=True)
class Policy:
    enforce: LevelVersion = PRIVILEGED_LATEST
    audit: LevelVersion = PRIVILEGED_LATEST
    warn: LevelVersion = PRIVILEGED_LATEST

    def fully_privileged(self) -> bool:
        return self.enforce.level == PRIVILEGED and self.audit.level == PRIVILEGED and self.warn.level == PRIVILEGED

    def equivalent(self, other: Policy) -> bool:
        return (self.enforce.equivalent(other.enforce) and self.audit.equivalent(other.audit)
                and self.warn.equivalent(other.warn))


class ParseError(ValueError):
    pass


def parse_level(level: str) -> str:
    """Upstream: ParseLevel (the caller falls back to restricted on error)."""
    if level in _STRICTNESS:
        return level
    raise ParseError(_LEVEL_ERROR)


def parse_version(version: str) -> Version:
    """"latest" or "v1.<minor>" (no leading zero). Upstream: ParseVersion."""
    if version == VERSION_LATEST:
        return LATEST
    m = _VERSION_RE.fullmatch(version) if isinstance(version, str) else None
    if m is None:
        raise ParseError(_VERSION_ERROR)
    return Version(1, int(m.group(1)))


def compare_levels(a: str, b: str) -> int:
    """-1, 0 or +1 as a is less, as, or more strict than b. Upstream: CompareLevels."""
    d = _STRICTNESS.get(a, 1) - _STRICTNESS.get(b, 1)
    return (d > 0) - (d < 0)


def has_policy_labels(labels: Mapping[str, str] | None) -> bool:
    """Whether any pod-security label is set: the namespaces without one (nearly all) take the
    defaults without parsing anything."""
    if labels:
        for k in labels:          # a loop, not any(<generator>): this runs for every pod
            if k.startswith(LABEL_PREFIX):
                return True
    return False


def policy_to_evaluate(labels: Mapping[str, str] | None, defaults: Policy) -> tuple[Policy, list[errors.FieldError]]:
    """The namespace's policy: its labels over the defaults, and the errors of bad labels. A
    valid policy always comes back: a bad enforce level is restricted, a bad version latest,
    a bad audit or warn level privileged (fail open). An explicit enforce level stricter than
    the warn level also warns at that level. Upstream: PolicyToEvaluate."""
    if not labels:
        return defaults, []
    errs: list[errors.FieldError] = []

    def level(label: str, current: str, fallback: str) -> str:
        value = labels[label]
        try:
            return parse_level(value)
        except ParseError as e:
            errs.append(errors.invalid(f"metadata.labels[{label}]", value, str(e)))
            return fallback

    def version(label: str) -> Version:
        value = labels[label]
        try:
            return parse_version(value)
        except ParseError as e:
            errs.append(errors.invalid(f"metadata.labels[{label}]", value, str(e)))
            return LATEST

    enforce, audit, warn = defaults.enforce, defaults.audit, defaults.warn
    has_enforce_level = False
    if ENFORCE_LEVEL_LABEL in labels:
        n = len(errs)
        enforce = LevelVersion(level(ENFORCE_LEVEL_LABEL, enforce.level, RESTRICTED), enforce.version)
        has_enforce_level = len(errs) == n        # a bad enforce level does not default warn
    if ENFORCE_VERSION_LABEL in labels:
        enforce = LevelVersion(enforce.level, version(ENFORCE_VERSION_LABEL))
    if AUDIT_LEVEL_LABEL in labels:
        audit = LevelVersion(level(AUDIT_LEVEL_LABEL, audit.level, PRIVILEGED), audit.version)
    if AUDIT_VERSION_LABEL in labels:
        audit = LevelVersion(audit.level, version(AUDIT_VERSION_LABEL))
    has_warn_level = WARN_LEVEL_LABEL in labels
    if has_warn_level:
        warn = LevelVersion(level(WARN_LEVEL_LABEL, warn.level, PRIVILEGED), warn.version)
    has_warn_version = WARN_VERSION_LABEL in labels
    if has_warn_version:
        warn = LevelVersion(warn.level, version(WARN_VERSION_LABEL))
    if not has_warn_level and has_enforce_level and compare_levels(enforce.level, warn.level) > 0:
        warn = LevelVersion(enforce.level, warn.version if has_warn_version else enforce.version)
    return Policy(enforce, audit, warn), errs
