"""The API error hierarchy, mirroring k8s.io/apimachinery/pkg/api/errors.

Every failure that reaches a client is a `StatusError` carrying a metav1 `Status` body with
upstream's `reason`, `code`, `message` and `details`. Storage and HTTP layers translate their
own failures into these, most specific first; controllers catch them by class
(`except errors.NotFound`) or with the `is_*` predicates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import Any

from . import gojson

# --- field errors (k8s.io/apimachinery/pkg/util/validation/field) ------------------------

# ErrorType -> (cause reason, rendered type)
REQUIRED = ("FieldValueRequired", "Required value")
INVALID = ("FieldValueInvalid", "Invalid value")
NOT_SUPPORTED = ("FieldValueNotSupported", "Unsupported value")
FORBIDDEN = ("FieldValueForbidden", "Forbidden")
DUPLICATE = ("FieldValueDuplicate", "Duplicate value")
NOT_FOUND = ("FieldValueNotFound", "Not found")
TOO_LONG = ("FieldValueTooLong", "Too long")
TOO_MANY = ("FieldValueTooMany", "Too many")
TYPE_INVALID = ("FieldValueTypeInvalid", "Invalid value")
TOO_FEW = ("FieldValueTooFew", "Too few")
TOO_SHORT = ("FieldValueTooShort", "Too short")
INTERNAL = ("InternalError", "Internal error")

_OMIT = object()      # upstream's omitValue: the type is printed without a value
# Types whose value upstream never prints (ErrorBody in field/errors.go).
_VALUELESS = {REQUIRED, FORBIDDEN, TOO_LONG, TOO_SHORT, INTERNAL}


def render_value(value: Any) -> str:
    """Render a bad value as field.Error.ErrorBody does: strings with %q, numbers and bools with
    %v, nil as `null`, and everything else (lists, maps, structs) as its JSON, map keys sorted.
    A JSONValue keeps its dict order (a Go struct's fields)."""
    if isinstance(value, str):
        return gojson.quote(value)
    if isinstance(value, float):
        return gojson.format_float_v(value)
    if isinstance(value, JSONValue):
        return gojson.marshal(value.value, sort_keys=False)
    if value is None or isinstance(value, (bool, int, list, tuple, dict)):
        return gojson.marshal(value)
    return str(value)      # a Stringer


class JSONValue:
    """A bad value that stands for a Go struct: rendered as its JSON with the dict's key order
    as the struct's field order (a plain dict is a Go map: its keys are sorted)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return gojson.marshal(self.value, sort_keys=False)


def go_quote(s: str) -> str:
    """Quote s like Go's %q (strconv.Quote)."""
    return gojson.quote(s)


def go_quote_list(values: Iterable[str]) -> str:
    """Go's %q of a []string: ["a" "b"]."""
    return "[" + " ".join(gojson.quote(v) for v in values) + "]"


@dataclass
class FieldError:
    """One validation failure at a field path (field.Error)."""

    type: tuple[str, str]
    field: str
    value: Any = _OMIT
    detail: str = ""

    def body(self) -> str:
        """The message without the field path (field.Error.ErrorBody)."""
        s = self.type[1]
        if self.type not in _VALUELESS and self.value is not _OMIT:
            s = f"{s}: {render_value(self.value)}"
        if self.detail:
            s = f"{s}: {self.detail}"
        return s

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, str]:
        return {"reason": self.type[0], "message": self.body(), "field": self.field}


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, path, _OMIT, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(INVALID, path, value, detail)


def not_supported(path: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
    return FieldError(NOT_SUPPORTED, path, value, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, path, _OMIT, detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(DUPLICATE, path, value)


def not_found(path: str, value: Any) -> FieldError:
    return FieldError(NOT_FOUND, path, value)


def too_long(path: str, max_len: int) -> FieldError:
    """Upstream: field.TooLong (the value is never printed)."""
    detail = f"may not be more than {max_len} {'byte' if max_len == 1 else 'bytes'}" if max_len >= 0 \
        else "value is too long"
    return FieldError(TOO_LONG, path, _OMIT, detail)


def too_many(path: str, actual: int, max_items: int) -> FieldError:
    """Upstream: field.TooMany (a negative actual count is omitted)."""
    detail = f"must have at most {max_items} {'item' if max_items == 1 else 'items'}" if max_items >= 0 \
        else "has too many items"
    return FieldError(TOO_MANY, path, actual if actual >= 0 else _OMIT, detail)


def internal_error(path: str, err: BaseException | str) -> FieldError:
    """Upstream: field.InternalError."""
    return FieldError(INTERNAL, path, _OMIT, str(err))


def aggregate(errs: list[FieldError]) -> str:
    """Join messages like ErrorList.ToAggregate().Error(): duplicates once, one plain, several
    as [a, b]."""
    msgs = list(dict.fromkeys(str(e) for e in errs))
    return msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]" if msgs else ""


# --- status errors -------------------------------------------------------------------------


@dataclass
class StatusError(Exception):
    """An API failure that is sent to the client as a metav1 Status."""

    code: int = 500
    reason: str = "InternalError"
    message: str = ""
    details: dict[str, Any] | None = field(default=None)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def status(self) -> dict[str, Any]:
        """The metav1 Status body for this error."""
        st: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:        # upstream: a non-nil *StatusDetails, {} when empty
            st["details"] = self.details
        if not self.reason:
            del st["reason"]
        return st

    @classmethod
    def from_status(cls, st: dict[str, Any]) -> StatusError:
        """Rebuild the most specific error class from a Status body (client side)."""
        reason = st.get("reason", "")
        code = int(st.get("code") or 500)
        klass = _BY_REASON.get(reason) or _BY_CODE.get(code) or StatusError
        err = klass.__new__(klass)
        StatusError.__init__(err, code, reason, st.get("message", ""), st.get("details"))
        return err


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "group": group, "kind": kind} if name else {"group": group, "kind": kind}
    if not group:
        d.pop("group")
    d.update(extra)
    return d


def qualified(group: str, resource: str) -> str:
    """schema.GroupResource.String(): "deployments.apps", or "pods" for the core group."""
    return f"{resource}.{group}" if group else resource


class NotFound(StatusError):
    def __init__(self, group: str, resource: str, name: str) -> None:
        super().__init__(404, "NotFound", f'{qualified(group, resource)} "{name}" not found',
                         _details(name, group, resource))


class AlreadyExists(StatusError):
    def __init__(self, group: str, resource: str, name: str) -> None:
        super().__init__(409, "AlreadyExists", f'{qualified(group, resource)} "{name}" already exists',
                         _details(name, group, resource))


class Conflict(StatusError):
    def __init__(self, group: str, resource: str, name: str, why: str) -> None:
        super().__init__(409, "Conflict",
                         f'Operation cannot be fulfilled on {qualified(group, resource)} "{name}": {why}',
                         _details(name, group, resource))


# The StatusCause reason of a create refused because its namespace is being deleted.
# Upstream: v1.NamespaceTerminatingCause.
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


def has_status_cause(err: BaseException, cause_type: str) -> bool:
    """Upstream: apierrors.HasStatusCause — the Status details name a cause of this type
    (on the wire a cause's type is its `reason`)."""
    details = getattr(err, "details", None) or {}
    return any(c.get("reason") == cause_type for c in details.get("causes") or ())


OPTIMISTIC_LOCK_MSG = "the object has been modified; please apply your changes to the latest version and try again"


class Invalid(StatusError):
    def __init__(self, group: str, kind: str, name: str, errs: list[FieldError]) -> None:
        qualified_kind = f"{kind}.{group}" if group else kind
        message = f'{qualified_kind} "{name}" is invalid' + (f": {aggregate(errs)}" if errs else "")
        super().__init__(422, "Invalid", message,
                         _details(name, group, kind, causes=[e.cause() for e in errs]))
        self.errs = errs


class BadRequest(StatusError):
    def __init__(self, message: str) -> None:
        super().__init__(400, "BadRequest", message)


class Unauthorized(StatusError):
    def __init__(self, message: str = "Unauthorized") -> None:
        super().__init__(401, "Unauthorized", message)


class Forbidden(StatusError):
    """NewForbidden of no resource (a path's): its Details are empty, `"details":{}`."""

    def __init__(self, message: str) -> None:
        super().__init__(403, "Forbidden", message, {})


class MethodNotSupported(StatusError):
    def __init__(self, group: str, resource: str, verb: str) -> None:
        super().__init__(405, "MethodNotAllowed",
                         f"{verb} is not supported on resources of kind {go_quote(qualified(group, resource))}",
                         _details("", group, resource))


class NotAcceptable(StatusError):
    def __init__(self, message: str) -> None:
        super().__init__(406, "NotAcceptable", message)


class UnsupportedMediaType(StatusError):
    def __init__(self, content_type: str, accepted: list[str]) -> None:
        super().__init__(415, "UnsupportedMediaType",
                         "the body of the request was in an unknown format - accepted media types include: "
                         + ", ".join(accepted))
        self.content_type = content_type


class Gone(StatusError):
    """410: the requested resourceVersion has been compacted (reason Expired)."""

    def __init__(self, message: str = "too old resource version") -> None:
        super().__init__(410, "Expired", message)


class RequestEntityTooLarge(StatusError):
    def __init__(self, message: str = "limit is 3145728") -> None:
        super().__init__(413, "RequestEntityTooLarge", f"Request entity too large: {message}")


class TooManyRequests(StatusError):
    def __init__(self, message: str = "Too many requests, please try again later.") -> None:
        super().__init__(429, "TooManyRequests", message)


class InternalError(StatusError):
    def __init__(self, message: str) -> None:
        super().__init__(500, "InternalError", f"Internal error occurred: {message}")


class Timeout(StatusError):
    def __init__(self, message: str) -> None:
        super().__init__(504, "Timeout", message)


_BY_REASON: dict[str, type[StatusError]] = {
    "NotFound": NotFound, "AlreadyExists": AlreadyExists, "Conflict": Conflict,
    "Invalid": Invalid, "BadRequest": BadRequest, "Unauthorized": Unauthorized,
    "Forbidden": Forbidden, "MethodNotAllowed": MethodNotSupported, "NotAcceptable": NotAcceptable,
    "UnsupportedMediaType": UnsupportedMediaType, "Expired": Gone, "Gone": Gone,
    "RequestEntityTooLarge": RequestEntityTooLarge, "TooManyRequests": TooManyRequests,
    "InternalError": InternalError, "Timeout": Timeout,
}
_BY_CODE: dict[int, type[StatusError]] = {404: NotFound, 410: Gone, 422: Invalid, 400: BadRequest,
                                          401: Unauthorized, 403: Forbidden}


def is_not_found(err: BaseException) -> bool:
    return isinstance(err, NotFound)


def is_already_exists(err: BaseException) -> bool:
    return isinstance(err, AlreadyExists)


def is_conflict(err: BaseException) -> bool:
    return isinstance(err, Conflict)


def is_invalid(err: BaseException) -> bool:
    return isinstance(err, Invalid)


def is_gone(err: BaseException) -> bool:
    return isinstance(err, Gone)
