"""Pieces every REST verb shares: decoding with field validation, a write's options for the
generic store (write_options, delete_options), selectors, paging and response building. The
write pipeline itself is the registry's (registry/store.py, registry/deletion.py)."""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import orjson

from ...api import decode, errors, labels
from ...api.resources import ResourceInfo
from ...storage.interface import KeyValue
from .. import codec
from ..objects import Obj, check_type_meta, parse_uint64, precondition_revision  # noqa: F401  (handlers' names)
from ..registry import resource_definition
from ..delete_options import delete_options as parse_delete_options
from ..patch.strict import patch_problems, strict_patch_error
from ..registry.deletion import DeleteOptions
from ..registry.store import WriteOptions
from ..request import Request, Response
from ..worker import in_worker
from . import continue_token

if TYPE_CHECKING:
    from ..server import APIServer

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


# --- decoding -----------------------------------------------------------------------------

async def decode_object(api: APIServer, req: Request, ri: ResourceInfo, heavy: bool) -> tuple[Obj, list[str]]:
    """Decode a create/update body and apply fieldValidation; returns (object, warnings).
    `heavy` (is_heavy(req)): decode in the worker thread.

    events.k8s.io Events are stored as core/v1 Events (one storage, as upstream).
    """
    warnings: list[str] = []
    mode = field_validation(req)
    coerce = getattr(ri, "coerce", None)        # custom resources (ri: their definition)
    # A custom object's unknown fields are the typed decode's and its schema's: Strict reports
    # them in one error (the decode warns, then both are refused together).
    decode_mode = "Warn" if coerce is not None and mode == "Strict" else mode
    if req.obj is not None:
        obj = req.obj
    elif heavy:
        obj, warnings = await in_worker(codec.decode_object, req.headers, req.body, ri, decode_mode)
    else:
        obj, warnings = codec.decode_object(req.headers, req.body, ri, decode_mode)
    check_type_meta(obj, ri)
    if coerce is not None:
        problems = coerce(obj)
        if mode == "Strict" and (warnings or problems):
            raise decode.strict_error(ri.kind, warnings + problems, version=ri.version)
        if mode == "Warn":
            warnings.extend(problems)
    return input_obj(ri, obj), warnings


# --- keeping the event loop free ------------------------------------------------------------

# A request this large (body, plus the stored object a patch applies to) is decoded, patched,
# defaulted and validated in a worker thread, so the event loop goes on serving meanwhile:
# the thread hands the GIL to the loop every sys.getswitchinterval() (5 ms). One thread:
# these steps hold the GIL anyway, and with more threads the loop would wait behind each.
# Smaller requests stay on the loop, where a pod costs less than the hop to a thread (~50 us).
OFFLOAD_BYTES = 64 * 1024


def is_heavy(req: Request, kv: KeyValue | None = None) -> bool:
    """Whether req's CPU work belongs in the worker thread: a big body or stored object, a
    YAML body with aliases or a JSON patch with copies (either may grow to 3 MiB: see
    yaml_aliases and patch/jsonpatch.py)."""
    if req.obj is not None:             # an in-process component's write: its own object
        return False
    body = req.body
    size = len(body) + (len(kv.value) if kv is not None and kv.value is not None else 0)
    if size > OFFLOAD_BYTES:
        return True
    if b"*" in body and b"&" in body:
        return "yaml" in codec.media_type(req.headers)
    return b'"copy"' in body and codec.media_type(req.headers) == "application/json-patch+json"


def input_obj(ri: ResourceInfo, obj: Obj) -> Obj:
    """The object as it is stored, from the requested API version's form (output_obj's inverse;
    ResourceDefinition.to_storage)."""
    convert = resource_definition(ri).to_storage
    return convert(obj) if convert is not None else obj


async def served_kv(ri: ResourceInfo, kv: KeyValue) -> KeyValue:
    """A stored object as the requested version serves it (ResourceDefinition.storage_codec:
    custom resources, converted by their CRD's converter); other kinds as they are."""
    codec = resource_definition(ri).storage_codec
    return kv if codec is None else (await codec.decode([kv]))[0]


async def served_kvs(ri: ResourceInfo, kvs: list[KeyValue]) -> list[KeyValue]:
    """served_kv of a list's items, converted together."""
    codec = resource_definition(ri).storage_codec
    return kvs if codec is None else await codec.decode(kvs, True)


async def served_obj(ri: ResourceInfo, key: str, obj: Obj) -> Obj:
    """served_kv of an object the store answered in its stored form (a delete's)."""
    if resource_definition(ri).storage_codec is None:
        return obj
    return (await served_kv(ri, KeyValue(key, orjson.dumps(obj), obj, 0, 0))).obj


def field_validation(req: Request) -> str:
    mode = req.query.get("fieldValidation", "Warn") or "Warn"
    if mode not in FIELD_VALIDATION:
        raise errors.BadRequest(f'fieldValidation parameter unsupported: "{mode}"; '
                                'must be one of "Ignore", "Warn", or "Strict"')
    return mode


def check_patched_fields(req: Request, ri: ResourceInfo, obj: Obj, warnings: list[str]) -> None:
    """Decode a patch result as upstream decodes it into the typed object: wrong types are
    400; unknown fields are dropped and reported per fieldValidation, after the patch's own
    strict errors (Strict: one 422, patch/strict.py); nulls become what Go makes of them
    (decode.typed_decode). obj must be the request's own (it is changed in place)."""
    mode = field_validation(req)
    patched = orjson.dumps(obj) if mode == "Strict" else b""     # what the 422 prints (patch/strict.py)
    try:
        type_err, problems = decode.typed_decode(obj, ri.definition)
        if type_err:
            raise errors.BadRequest(decode.type_error_message(obj, ri.definition, type_err))
    except RecursionError:
        raise errors.BadRequest(f"{ri.kind} in version {errors.go_quote(ri.version)} cannot be handled as a "
                                f"{ri.kind}: exceeded max depth") from None
    if (coerce := getattr(ri, "coerce", None)) is not None:      # custom resources (ri: their definition)
        problems = problems + coerce(obj)
    if mode == "Ignore":
        return
    patch_type = codec.media_type(req.headers)
    problems = patch_problems(patch_type, req.body) + problems      # the patch's own come first
    if problems and mode == "Strict":
        raise strict_patch_error(patch_type, req.body, patched, problems)
    warnings.extend(decode.warning_texts(problems))


def delete_options(req: Request) -> DeleteOptions:
    """The request's DeleteOptions for the generic store: its body, or else its query,
    converted and validated as upstream's delete handler does (apiserver/delete_options.py)."""
    o = parse_delete_options(req)
    pre = o.get("preconditions") or {}
    return DeleteOptions(o.get("gracePeriodSeconds"), o.get("propagationPolicy"), o.get("orphanDependents"),
                         pre.get("uid"), pre.get("resourceVersion"), bool(o.get("dryRun")))


def write_options(req: Request) -> WriteOptions:
    """What the generic store needs of a write request (registry/store.py)."""
    return WriteOptions(req.user, dry_run(req), req.query.get("fieldManager", ""), req.headers.get("user-agent", ""),
                        req.query.get("fieldValidation", ""))


def dry_run(req: Request) -> bool:
    value = req.query.get("dryRun", "")
    if value and value != "All":
        raise errors.BadRequest(f"Invalid dry run value: [{value}]: supported values: \"All\"")
    return value == "All"


FIELD_MANAGER_MAX_LENGTH = 128


def validate_patch_options(req: Request, patch_type: str) -> None:
    """The PatchOptions a PATCH's query carries, checked before anything is read: server-side
    apply names its fieldManager, only apply takes `force`, and a manager is at most 128
    printable characters (422 on PatchOptions.meta.k8s.io "").

    Example: an apply patch without ?fieldManager= -> `PatchOptions.meta.k8s.io "" is invalid:
    fieldManager: Required value: is required for apply patch`.
    Upstream: ValidatePatchOptions and ValidateFieldManager
    (apimachinery pkg/apis/meta/v1/validation), called by PatchResource (handlers/patch.go).
    """
    manager = req.query.get("fieldManager", "")
    errs = []
    if patch_type.startswith("application/apply-patch"):
        if not manager:
            errs.append(errors.required("fieldManager", "is required for apply patch"))
    elif "force" in req.query:
        errs.append(errors.forbidden("force", "may not be specified for non-apply patch"))
    if len(manager) > FIELD_MANAGER_MAX_LENGTH:
        errs.append(errors.too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    for i, ch in enumerate(manager):
        if not ch.isprintable():            # Go's unicode.IsPrint; %#U of the rune, its byte offset
            errs.append(errors.invalid("fieldManager", manager, f"invalid character U+{ord(ch):04X} "
                                       f"(at position {len(manager[:i].encode())})"))
    if errs:
        raise errors.Invalid("meta.k8s.io", "PatchOptions", "", errs)


def patch_pins_revision(req: Request, patch_type: str) -> bool:
    """Whether the patch sets metadata.resourceVersion (then a conflict is the caller's to
    resolve, as upstream: no retry). Only called after a conflict, so parsing again is cheap."""
    try:
        patch = req.obj if req.obj is not None else (
            decode.decode_yaml(req.body)[0] if "yaml" in patch_type else decode.parse_json(req.body))
    except (errors.StatusError, ValueError, RecursionError):
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
                   labels.parse_fields(req.query.get("fieldSelector", ""), resource_definition(ri).field_selectors))

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
    """Upstream: APIObjectVersioner.ParseResourceVersion ("" and "0" are 0), as list, get and
    watch report its failure: `invalid resource version: resourceVersion: Invalid value: "x":
    strconv.ParseUint: parsing "x": invalid syntax` (or `value out of range`)."""
    if rv in ("", "0"):
        return 0
    n, problem = parse_uint64(rv)
    if problem:
        raise errors.BadRequest(f"invalid resource version: resourceVersion: Invalid value: "
                                f"{errors.go_quote(rv)}: {problem}")
    return n


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
    if q.get("continue"):
        continue_token.decode_continue(q["continue"])
        if rv and rv != "0":
            raise errors.BadRequest("specifying resource version is not allowed when using continue")
    n = parse_resource_version(rv)
    current = api.storage.revision
    if n > current:
        raise too_large_resource_version(n, current)
    if match == "Exact" and n != current:
        raise errors.Gone("The resourceVersion for the provided list is too old.")


def parse_limit(value: str) -> int:
    """The limit query parameter, an int64 (ParameterCodec: strconv.ParseInt's error is the 400's
    text); zero or negative means no limit."""
    if not value:
        return 0
    digits = value[1:] if value[:1] in "+-" else value
    if not (digits.isascii() and digits.isdigit()):
        why = "invalid syntax"
    elif len(digits.lstrip("0")) <= 19 and -(2**63) <= (n := int(value)) < 2**63:
        return max(n, 0)
    else:
        why = "value out of range"
    raise errors.BadRequest(f"strconv.ParseInt: parsing {errors.go_quote(value)}: {why}")


make_continue = continue_token.encode_continue


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

    The token's revision is the snapshot the pages are read at (we read the current state,
    and report the first page's revision): one in the future is upstream's 504 "Too large
    resource version" (etcd's ErrFutureRev), a negative one means the latest (the token a
    compacted list hands out), a compacted one is 410 with a token (rv -1) that continues at
    the latest revision (handleCompactedErrorForPaging).
    Upstream: ValidateListOptions (storage/interfaces.go), store.GetList (etcd3/store.go).
    """
    if not token:
        return "", rev
    start, token_rev = continue_token.decode_continue(token)
    if token_rev < 0:
        return start, rev
    if token_rev > rev:
        raise too_large_resource_version(token_rev, rev)
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
    """The object as the requested API version shows it (ResourceDefinition.from_storage)."""
    convert = resource_definition(ri).from_storage
    return convert(obj) if convert is not None else obj


def output_bytes(ri: ResourceInfo, obj: Obj, value: bytes | None) -> bytes:
    # getattr, not resource_definition(): every listed object passes here (ri is the
    # registry's definition on the serving path), and the call would double its cost.
    if value is None or getattr(ri, "from_storage", None) is not None:
        return orjson.dumps(output_obj(ri, obj))
    return value


# Upstream: truncateAtTotalRunes, truncateItemRunes (endpoints/filters/warning.go).
TRUNCATE_AT_TOTAL_RUNES = 4 * 1024
TRUNCATE_ITEM_RUNES = 256


def warning_headers(warnings: list[str]) -> list[tuple[str, str]]:
    """The Warning headers of a response, as upstream's warning recorder writes them.

    Each is `299 - "text"` with `"` and `\\` escaped (NewWarningHeader, apimachinery
    util/net/http.go); empty and repeated texts are skipped, and so is a text that is not valid
    UTF-8 or holds a control character (NewWarningHeader refuses it; an unknown field named
    "a\x7f" must not break the response). Once the texts pass 4,096 runes in all, every one is
    cut to 256 runes. Upstream: recorder.AddWarning (endpoints/filters/warning.go)
    """
    texts = [w for w in dict.fromkeys(warnings) if w and _header_safe(w)]
    if sum(map(len, texts)) > TRUNCATE_AT_TOTAL_RUNES:
        texts = [w[:TRUNCATE_ITEM_RUNES] for w in texts]
    return [("warning", '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"') for w in texts]


def _header_safe(text: str) -> bool:
    """Valid UTF-8 (no lone surrogates) without control characters (Go's unicode.IsControl: Cc)."""
    if text.isascii() and text.isprintable():        # the common case, decided in C
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text)


def object_response(api: APIServer, req: Request, ri: ResourceInfo, obj: Obj, value: bytes | None,
                    *, status: int = 200, warnings: list[str] | None = None) -> Response:
    headers = warning_headers(warnings) if warnings else []
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
                            now=api.clock.now(), list_meta=list_meta, version=ri.version)
    return Response(200, orjson.dumps(table))
