"""What a check is, and the helpers the checks share.

A check function takes the pod's (or pod template's) metadata and spec as the API's JSON dicts
and returns None when it allows them, or a Forbidden(reason, detail) with upstream's exact
strings. A Check lists the versions of its function by the first policy version each applies
to. Upstream: Check, VersionedCheck, CheckResult (policy/checks.go), visitContainers
(policy/visitor.go), joinQuote and pluralize (policy/helpers.go).

The objects were validated before admission, but a pod template of a kind validated less
strictly must not break a check: every read goes through dict_/list_, which turn a missing
or ill-typed value into an empty one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple

from .api import Version

Obj = dict[str, Any]


class Forbidden(NamedTuple):
    """A check's refusal. Upstream: CheckResult{Allowed: false, ForbiddenReason, ForbiddenDetail}."""
    reason: str
    detail: str = ""


CheckPodFn = Callable[[Obj, Obj], "Forbidden | None"]


@dataclass(frozen=True)
class VersionedCheck:
    minimum_version: Version
    check_pod: CheckPodFn
    # Baseline checks this (restricted) check replaces, e.g. capabilities_restricted replaces
    # capabilities_baseline.
    override_check_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    id: str
    level: str                        # baseline or restricted
    versions: tuple[VersionedCheck, ...] = field(default=())


def dict_(v: Any) -> Obj:
    return v if isinstance(v, dict) else {}


def list_(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def visit_containers(spec: Obj) -> Iterator[Obj]:
    """Init containers, containers, then ephemeral containers. Upstream: visitContainers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in list_(spec.get(key)):
            if isinstance(c, dict):
                yield c


def security_context(obj: Obj) -> Obj:
    """A pod spec's or container's securityContext ({} when unset)."""
    return dict_(obj.get("securityContext"))


def name(c: Obj) -> str:
    n = c.get("name")
    return n if isinstance(n, str) else ""


def join_quote(items: list[str]) -> str:
    """"a", "b" (upstream: joinQuote)."""
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def containers_phrase(names: list[str]) -> str:
    """`container "a"` / `containers "a", "b"`: the subject of most details."""
    return f'{pluralize("container", "containers", len(names))} {join_quote(names)}'


def is_windows(spec: Obj) -> bool:
    """spec.os.name is windows: the restricted checks that cannot apply to Windows pods skip them (1.25+)."""
    return dict_(spec.get("os")).get("name") == "windows"


def relax_for_user_namespace(spec: Obj) -> bool:
    """hostUsers: false (a user namespace) relaxes some checks (1.35+).
    Upstream: relaxPolicyForUserNamespacePod."""
    return spec.get("hostUsers") is False
