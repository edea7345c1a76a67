"""Pieces every REST verb shares: decoding with field validation, validation, selectors,
paging and response building (admission is the create handler's, rest.py)."""
from __future__ import annotations

import base64
import bisect
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import orjson
import yaml

from ...api import errors, labels
from ...api.resources import ResourceInfo
from ...storage.interface import KeyValue
from .. import codec
from ..objects import Obj, check_type_meta
from ..request import Request, Response

if TYPE_CHECKING:
    from ..server import APIServer

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


# --- decoding -----------------------------------------------------------------------------

def decode_object(api: APIServer, req: Request, ri: ResourceInfo) -> tuple[Obj, list[str]]:
    """Decode a create/update body and apply fieldValidation; returns (object, warnings).

    events.k8s.io Events are stored as core/v1 Events (one storage, as upstream).
    """
    if req.obj is not None:
        obj, warnings = req.obj, []
    else:
        obj, warnings = codec.decode_object(req.headers, req.body, ri, field_validation(req))
    check_type_meta(obj, ri)
    return input_obj(ri, obj), warnings


def input_obj(ri: ResourceInfo, obj: Obj) -> Obj:
    """The object as it is stored, from the requested API version's form (output_obj's inverse)."""
    if ri.group == "events.k8s.io":
        from ...api import conversion
        return conversion.event_events_v1_to_core(obj)
    return obj


def field_validation(req: Request) -> str:
    mode = req.query.get("fieldValidation", "Warn") or "Warn"
    if mode not in FIELD_VALIDATION:
        raise errors.BadRequest(f'fieldValidation parameter unsupported: "{mode}"; '
                                'must be one of "Ignore", "Warn", or "Strict"')
    return mode


def check_patched_fields(req: Request, ri: ResourceInfo, obj: Obj, warnings: list[str]) -> None:
    """Field validation of a patch result: wrong types are 400; unknown fields per fieldValidation."""
    from ...api import decode
    mode = field_validation(req)
    type_errs = decode.type_errors(obj, ri.definition)
    if type_errs:
        raise errors.BadRequest(type_errs[0])
    if mode == "Ignore":
        return
    problems = decode.field_problems(obj, ri.definition)
    if problems and mode == "Strict":
        raise decode.strict_error(ri.kind, problems, version=ri.version)
    warnings.extend(decode.warning_texts(problems))


def set_defaults(obj: Obj, subresource: str = "") -> None:
    from ...api import defaults
    if subresource == "status":
        defaults.set_defaults_except_spec(obj)
    else:
        defaults.set_defaults(obj)


# --- validation -----------------------------------------------------------------------------

def _invalid(ri: ResourceInfo, obj: Obj, errs: list[Any]) -> errors.Invalid:
    return errors.Invalid(ri.group, ri.kind, (obj.get("metadata") or {}).get("name", ""), errs)


def validate_create(ri: ResourceInfo, obj: Obj, warnings: list[str]) -> None:
    from ...api import validation
    errs = validation.validate(obj)
    if errs:
        raise _invalid(ri, obj, errs)
    warnings.extend(validation.warnings(obj))


def validate_update(ri: ResourceInfo, new: Obj, old: Obj, subresource: str, warnings: list[str]) -> None:
    from ...api import validation
    if subresource == "status":
        errs = validation.validate_status_update(new, old)
    else:
        errs = validation.validate_update(new, old)
    if errs:
        raise _invalid(ri, new, errs)


def record_managed_fields(api: APIServer, req: Request, ri: ResourceInfo, old: Obj | None, new: Obj,
                          subresource: str = "") -> None:
    """Track which manager set which fields (operation Update), as upstream's fieldmanager.

    Deviation, for speed: upstream tracks every write. We track writes that name a fieldManager
    (kubectl always does) and writes to objects that already carry managedFields (so ownership
    stays consistent for apply users); anonymous writes to untracked objects — the bulk of
    controller traffic on pods — skip it, which halves the cost of a pod create.
    """
    manager = req.query.get("fieldManager", "")
    if not manager:
        if not (old and old["metadata"].get("managedFields")):
            return
        manager = manager_from_user_agent(req.headers.get("user-agent", ""))
    from ..patch import update_managed_fields
    update_managed_fields(old, new, manager=manager, operation="Update", api_version=ri.api_version,
                          now=api.now(), subresource=subresource)


def manager_from_user_agent(ua: str) -> str:
    """Upstream: prefixFromUserAgent — "kubectl/v1.37.1 (linux/amd64)" -> "kubectl"."""
    return ua.split("/", 1)[0][:128] if ua else ""


def dry_run(req: Request) -> bool:
    value = req.query.get("dryRun", "")
    if value and value != "All":
        raise errors.BadRequest(f"Invalid dry run value: [{value}]: supported values: \"All\"")
    return value == "All"


def precondition_revision(obj: Obj, current: int) -> int:
    """The revision an update must find: the body's resourceVersion if it carries one."""
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    if not rv:
        return current
    try:
        return int(rv)
    except (TypeError, ValueError):
        raise errors.BadRequest(f"invalid resourceVersion: {rv!r}") from None


def patch_pins_revision(req: Request, patch_type: str) -> bool:
    """Whether the patch sets metadata.resourceVersion (then a conflict is the caller's to
    resolve, as upstream: no retry). Only called after a conflict, so parsing again is cheap."""
    try:
        patch = req.obj if req.obj is not None else (
            yaml.safe_load(req.body) if "yaml" in patch_type else orjson.loads(req.body))
    except (orjson.JSONDecodeError, yaml.YAMLError):
        return False
    if isinstance(patch, list):                       # JSON patch: an op on the field
        return any(isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" for op in patch)
    meta = patch.get("metadata") if isinstance(patch, dict) else None
    return isinstance(meta, dict) and meta.get("resourceVersion") is not None


# --- selectors and paging ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Selectors:
    label: labels.Selector
    field: labels.FieldSelector

    @classmethod
    def from_request(cls, req: Request, ri: ResourceInfo) -> Selectors:
        return cls(labels.parse(req.query.get("labelSelector", "")),
                   labels.parse_fields(req.query.get("fieldSelector", ""), ri.kind, ri.plural, ri.group))

    @property
    def empty(self) -> bool:
        return not self.label and not self.field

    def matches(self, obj: Obj) -> bool:
        if self.label and not labels.matches(self.label, obj["metadata"].get("labels")):
            return False
        return not self.field or labels.fields_match(self.field, obj)


def _list_options_invalid(errs: list[errors.FieldError]) -> errors.Invalid:
    return errors.Invalid("meta.k8s.io", "ListOptions", "", errs)


def validate_list_options(req: Request, watch: bool = False) -> None:
    """Upstream: ValidateListOptions / validateWatchOptions (apis/meta/internalversion/validation)."""
    q = req.query
    match, rv, cont = q.get("resourceVersionMatch", ""), q.get("resourceVersion", ""), q.get("continue", "")
    errs: list[errors.FieldError] = []
    if watch:
        if "sendInitialEvents" in q and match != "NotOlderThan":
            errs.append(errors.forbidden("resourceVersionMatch",
                                         "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if match:
            if "sendInitialEvents" not in q:
                errs.append(errors.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch "
                                             "unless sendInitialEvents is provided"))
            if match != "NotOlderThan":
                errs.append(errors.not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
            if cont:
                errs.append(errors.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
    else:
        if match:
            if not rv:
                errs.append(errors.forbidden("resourceVersionMatch",
                                             "resourceVersionMatch is forbidden unless resourceVersion is provided"))
            if cont:
                errs.append(errors.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
            if match not in ("Exact", "NotOlderThan"):
                errs.append(errors.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
            if match == "Exact" and rv == "0":
                errs.append(errors.forbidden("resourceVersionMatch",
                                             'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
        if "sendInitialEvents" in q:
            errs.append(errors.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if errs:
        raise _list_options_invalid(errs)


def parse_resource_version(rv: str) -> int:
    """Upstream: APIObjectVersioner.ParseResourceVersion ("" and "0" are 0)."""
    if rv in ("", "0"):
        return 0
    if rv.isascii() and rv.isdigit():
        return int(rv)
    q = errors.go_quote(rv)
    raise errors.BadRequest(f"invalid resource version: resourceVersion: Invalid value: {q}: "
                            f"strconv.ParseUint: parsing {q}: invalid syntax")


def too_large_resource_version(requested: int, current: int) -> errors.StatusError:
    """Upstream: storage.NewTooLargeResourceVersionError (a 504 the client retries)."""
    return errors.StatusError(504, "Timeout", f"Too large resource version: {requested}, current: {current}",
                              {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                               "retryAfterSeconds": 1})


def check_list_resource_version(api: APIServer, req: Request) -> None:
    """What a list at resourceVersion/resourceVersionMatch may be served from.

    We keep no snapshots, so every list reads the current state: that satisfies unset, "0" and
    NotOlderThan N (N <= current); a future N is upstream's 504 "Too large resource version";
    Exact is served only at the current revision, an older one is 410 as if compacted.
    """
    validate_list_options(req)
    q = req.query
    rv, match = q.get("resourceVersion", ""), q.get("resourceVersionMatch", "")
    if rv and q.get("continue") and rv != "0":
        raise errors.BadRequest("specifying resource version is not allowed when using continue")
    n = parse_resource_version(rv)
    current = api.storage.revision
    if n > current:
        raise too_large_resource_version(n, current)
    if match == "Exact" and n != current:
        raise errors.Gone("The resourceVersion for the provided list is too old.")


def parse_limit(value: str) -> int:
    try:
        n = int(value) if value else 0
    except ValueError:
        raise errors.BadRequest(f"invalid limit: {value!r}") from None
    return max(n, 0)


def make_continue(start_key: str, rev: int) -> str:
    """Upstream: storage.EncodeContinue — base64url of {"v","rv","start"}; start is relative to the list prefix."""
    token = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rev, "start": start_key})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


_INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - "
    "objects that were created, modified, or deleted between the time the first chunk was returned and "
    "now may show up in the list.")


class ContinueExpired(errors.Gone):
    """410 for a continue token whose revision was compacted; carries a token to go on at the latest."""

    def __init__(self, token: str) -> None:
        super().__init__(_INCONSISTENT_CONTINUE)
        self.token = token

    def status(self) -> dict[str, Any]:
        st = super().status()
        st["metadata"] = {"continue": self.token}
        return st


def parse_continue(token: str, rev: int, api: APIServer) -> tuple[str, int]:
    """Where a continued list starts, and the list revision it reports (the first page's).

    Upstream: storage.DecodeContinue; a compacted revision is 410 with a token (rv -1) that
    continues at the latest revision (handleCompactedErrorForPaging).
    """
    if not token:
        return "", rev
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError
        start, token_rev = str(data["start"]), int(data["rv"])
    except Exception:
        raise errors.BadRequest("continue key is not valid: incorrect encoded start resourceVersion "
                                "(version meta.k8s.io/v1)") from None
    if token_rev == -1:
        return start, rev
    if token_rev < api.storage.oldest_revision:
        raise ContinueExpired(make_continue(start, -1))
    return start, token_rev


def page(kvs: list[KeyValue], sel: Selectors, start: str, limit: int,
         prefix: str) -> tuple[list[KeyValue], str, int | None]:
    """Select one page: matching items with key >= prefix+start; (items, next start, remaining).

    As upstream's etcd list: a full page whose last key has any key after it (matching or not)
    gets a continue key just past it (last key + "\\x00"), and remainingItemCount is the
    number of keys after the page (only meaningful without selectors). Example: keys a..e,
    limit 2 -> page [a, b], next start "b\\x00", remaining 3.
    """
    out: list[KeyValue] = []
    i = 0
    if start:
        i = bisect.bisect_left(kvs, prefix + start, key=attrgetter("key"))
    for j in range(i, len(kvs)):
        kv = kvs[j]
        if sel.empty or sel.matches(kv.obj):
            out.append(kv)
            if limit and len(out) == limit:
                if j + 1 < len(kvs):
                    return out, kv.key[len(prefix):] + "\x00", len(kvs) - j - 1
                break
    return out, "", None


# --- responses ----------------------------------------------------------------------------

def output_obj(ri: ResourceInfo, obj: Obj) -> Obj:
    """The object as the requested API version shows it (events.k8s.io is converted)."""
    if ri.group == "events.k8s.io":
        from ...api import conversion
        return conversion.event_core_to_events_v1(obj)
    return obj


def output_bytes(ri: ResourceInfo, obj: Obj, value: bytes | None) -> bytes:
    if ri.group == "events.k8s.io" or value is None:
        return orjson.dumps(output_obj(ri, obj))
    return value


def warning_headers(warnings: list[str]) -> list[tuple[str, str]]:
    return [("warning", f'299 - "{w}"') for w in warnings]


def object_response(api: APIServer, req: Request, ri: ResourceInfo, obj: Obj, value: bytes | None,
                    *, status: int = 200, warnings: list[str] | None = None) -> Response:
    headers = warning_headers(warnings or [])
    if codec.wants_table(req.headers):
        resp = table_response(api, req, ri, [output_obj(ri, obj)], None, "")
        resp.status, resp.headers = status, headers
        return resp
    return Response(status, output_bytes(ri, obj, value), headers=headers)


def table_response(api: APIServer, req: Request, ri: ResourceInfo, objs: list[Obj], rev: int | None,
                   cont: str) -> Response:
    from .. import tables
    list_meta: dict[str, Any] = {}
    if rev is not None:
        list_meta["resourceVersion"] = str(rev)
    if cont:
        list_meta["continue"] = cont
    table = tables.to_table(ri.plural, ri.group, objs, include_object=req.query.get("includeObject", "Metadata"),
                            now=api.clock.now(), list_meta=list_meta)
    return Response(200, orjson.dumps(table))
