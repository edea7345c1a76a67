"""Helpers of the event recorder: references, event names, event types, Go-style formatting.

Upstream: client-go tools/record/util/util.go, tools/reference/ref.go
"""
from __future__ import annotations

import functools
import re
import uuid
from typing import Any

from ....api import errors
from ....api.types import core_v1
from ....api.validation.names import name_is_dns_subdomain

EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"


def validate_event_type(eventtype: str) -> bool:
    """Whether eventtype is Normal or Warning (the only types the recorder writes).

    Upstream: ValidateEventType, tools/record/util/util.go
    """
    return eventtype in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING)


def is_key_not_found_error(err: BaseException) -> bool:
    """Whether err is an API error with code 404 (the event to patch is gone).

    Upstream: IsKeyNotFoundError, tools/record/util/util.go
    """
    return isinstance(err, errors.StatusError) and err.code == 404


def generate_event_name(ref_name: str, unix_nano: int) -> str:
    """`<ref name>.<unix nanos in hex>`, or a random UUID when that is not a valid name.

    Example: ref "web", 1_600_000_000 s -> "web.16345785d8a00000" (1.6e18 ns in hex).
    An involved object's name need not be a DNS subdomain (a Node may be called
    "Node_1"), but an Event's must, so those get a UUID instead of a rejected create.
    Upstream: GenerateEventName, tools/record/util/util.go
    """
    name = f"{ref_name}.{unix_nano:x}"
    # Appending "." and a hex label keeps a valid subdomain valid and an invalid one invalid,
    # so only the object's name (cached: every event about one object repeats it) and the
    # total length need checking.
    if len(name) > 253 or not _valid_subdomain(ref_name):
        return str(uuid.uuid4())
    return name


@functools.lru_cache(maxsize=4096)
def _valid_subdomain(name: str) -> bool:
    return not name_is_dns_subdomain(name, False)


def get_reference(obj: Any) -> core_v1.ObjectReference:
    """The ObjectReference an Event's involvedObject carries for obj.

    obj is a typed top-level object (kind and apiVersion are read off it), a plain dict
    of one, or a core_v1.ObjectReference (returned as a copy: no reference to a
    reference). Raises ValueError when obj has no kind or apiVersion.
    Upstream: GetReference, tools/reference/ref.go
    """
    if isinstance(obj, core_v1.ObjectReference):
        return obj.__copy__()                  # scalar fields only: a shallow copy is a deep one
    if isinstance(obj, dict):
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        meta = obj.get("metadata") or {}
        name, ns, uid, rv = (meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion"))
    else:
        kind, api_version = getattr(obj, "kind", None), getattr(obj, "api_version", None)
        m = getattr(obj, "metadata", None)
        name, ns, uid, rv = ((m.name, m.namespace, m.uid, m.resource_version) if m is not None
                             else (None, None, None, None))
    if not kind or not api_version:
        raise ValueError(f"object has no kind/apiVersion: {type(obj).__name__}")
    return core_v1.ObjectReference(kind=kind, api_version=api_version, name=name or None,
                                   namespace=ns or None, uid=uid or None, resource_version=rv or None)


# --- Go's fmt.Sprintf, for Eventf messages ----------------------------------------------

_VERB = re.compile(r"%([-+# 0]*)(\d+|\*)?(?:\.(\d+))?([a-zA-Z%])")


def go_value(v: Any) -> str:
    """Render v like Go's %v: true/false, <nil>, [a b], map[k:v]."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + " ".join(go_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{go_value(k)}:{go_value(x)}" for k, x in sorted(v.items())) + "]"
    return str(v)


def sprintf(fmt: str, *args: Any) -> str:
    """Go's fmt.Sprintf for the verbs event messages use: %s %v %d %q %f %x %t %%.

    Flags, width and precision go to Python's % operator ("%5.1f", "%-3d"). As in Go,
    a missing argument renders "%!d(MISSING)" and a surplus one "%!(EXTRA int=1)".
    Example: sprintf("Scaled up replica set %s to %d from %d", "web-5d9", 3, 1)
    -> "Scaled up replica set web-5d9 to 3 from 1".
    """
    verbs = _plain_verbs(fmt)
    if verbs is not None and len(verbs) == len(args) and _plain_args(verbs, args):
        return fmt % args
    return _sprintf_go(fmt, args)


@functools.lru_cache(maxsize=1024)
def _plain_verbs(fmt: str) -> str | None:
    """The verbs of fmt if every % in it starts a bare %s, %d or %% (else None).

    Python's % renders those exactly as Go does for a str (%s) or an int (%d), and a
    controller's formats are a few constants, so each is parsed once.
    Example: "Created pod: %s" -> "s"; "100%% of %d" -> "d"; "%5.1f" and "%v" -> None.
    """
    verbs, percents = [], 0
    for m in _VERB.finditer(fmt):
        flags, width, prec, verb = m.groups()
        if flags or width or prec is not None or verb not in "sd%":
            return None
        percents += 2 if verb == "%" else 1
        if verb != "%":
            verbs.append(verb)
    return "".join(verbs) if percents == fmt.count("%") else None


def _plain_args(verbs: str, args: tuple[Any, ...]) -> bool:
    """Whether each argument is exactly a str for %s or an int (not a bool) for %d."""
    for verb, v in zip(verbs, args):
        if type(v) is not (str if verb == "s" else int):
            return False
    return True


def _sprintf_go(fmt: str, args: tuple[Any, ...]) -> str:
    it = iter(args)

    def repl(m: re.Match[str]) -> str:
        flags, width, prec, verb = m.group(1), m.group(2) or "", m.group(3), m.group(4)
        if verb == "%":
            return "%"
        try:
            v = next(it)
        except StopIteration:
            return f"%!{verb}(MISSING)"
        return _format_one(v, flags, width, prec, verb)

    out = _VERB.sub(repl, fmt)
    extra = list(it)
    if extra:
        out += "%!(EXTRA " + ", ".join(f"{type(x).__name__}={go_value(x)}" for x in extra) + ")"
    return out


def _format_one(v: Any, flags: str, width: str, prec: str | None, verb: str) -> str:
    spec = "%" + flags + width + (f".{prec}" if prec is not None else "")
    if verb == "q":
        return (spec + "s") % errors.go_quote(str(v))
    if verb == "t" or (verb in "sv" and not isinstance(v, str)):
        return (spec + "s") % go_value(v)
    if verb in "dxXofeEgG" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return (spec + verb) % v
    return (spec + "s") % (v if isinstance(v, str) else go_value(v))
