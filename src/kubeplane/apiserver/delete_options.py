"""DeleteOptions of a delete or deletecollection request: from its body or else its query, validated.

Upstream (apiserver handlers/delete.go, DeleteResource and DeleteCollection): a request with a
body decodes the body (JSON, YAML or protobuf; kubectl's typed clients and Helm send
`application/vnd.kubernetes.protobuf`, e.g. `kubectl drain --disable-eviction`) and ignores the
query entirely; a request without one converts the query parameters (url.Values ->
DeleteOptions: the first value of each, `strconv.ParseInt` for gracePeriodSeconds, "0"/"false"
false and anything else true for orphanDependents). Then ValidateDeleteOptions
(apimachinery pkg/apis/meta/v1/validation) answers 422 `DeleteOptions.meta.k8s.io "" is invalid`.

The result is the DeleteOptions JSON fields that were set: gracePeriodSeconds,
propagationPolicy, orphanDependents, preconditions {uid, resourceVersion}, dryRun.
"""
from __future__ import annotations

import re
from typing import Any

from ..api import errors
from . import codec
from .request import Request

DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
POLICIES = ("Foreground", "Background", "Orphan")
DRY_RUN_ALL = "All"
_INT64 = re.compile(r"[+-]?[0-9]+")


def delete_options(req: Request) -> dict[str, Any]:
    """The request's DeleteOptions (see the module docstring); raises upstream's 400 or 422.
    An in-process component's (Request.obj) are its own dict, built in code: trusted as its
    other writes' objects are (not type-checked), validated all the same."""
    if req.obj is not None:
        opts = req.obj
    elif req.body:
        opts = _from_body(req)
    else:
        opts = _from_query(req.query)
    errs = validate_delete_options(opts)
    if errs:
        raise errors.Invalid("meta.k8s.io", "DeleteOptions", "", errs)
    return opts


def _from_body(req: Request) -> dict[str, Any]:
    """The body decoded into the typed DeleteOptions (unknown fields ignored; a wrong JSON type
    is a 400, upstream's NewBadRequest of the decoder's error)."""
    body, _ = codec.decode_typed(req.headers, req.body, DELETE_OPTIONS, "DeleteOptions", "v1", "Ignore")
    return body


def _from_query(query: dict[str, str]) -> dict[str, Any]:
    """Upstream: Convert_url_Values_To_v1_DeleteOptions (zz_generated.conversion.go) with the
    runtime's Convert_Slice_string_To_Pointer_int64 / _bool."""
    opts: dict[str, Any] = {}
    if "gracePeriodSeconds" in query:
        opts["gracePeriodSeconds"] = parse_int64(query["gracePeriodSeconds"])
    if "orphanDependents" in query:
        v = query["orphanDependents"]
        opts["orphanDependents"] = not (v == "0" or v.lower() == "false")
    if "propagationPolicy" in query:
        opts["propagationPolicy"] = query["propagationPolicy"]
    if "dryRun" in query:
        opts["dryRun"] = [query["dryRun"]]
    return opts


def parse_int64(s: str) -> int:
    """Go's strconv.ParseInt(s, 10, 64); raises BadRequest with its error text."""
    if not _INT64.fullmatch(s):
        raise errors.BadRequest(f"strconv.ParseInt: parsing {errors.go_quote(s)}: invalid syntax")
    n = int(s)
    if not -(1 << 63) <= n < (1 << 63):
        raise errors.BadRequest(f"strconv.ParseInt: parsing {errors.go_quote(s)}: value out of range")
    return n


class GoSyntax:
    """A bad value printed as Go's %#v prints it (field.Error's fallback for slices)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def validate_delete_options(opts: dict[str, Any]) -> list[errors.FieldError]:
    """Upstream: ValidateDeleteOptions (apimachinery pkg/apis/meta/v1/validation/validation.go)."""
    errs = []
    policy = opts.get("propagationPolicy")
    if opts.get("orphanDependents") is not None and policy is not None:
        errs.append(errors.invalid("propagationPolicy", policy,
                                   "orphanDependents and deletionPropagation cannot be both set"))
    if policy is not None and policy not in POLICIES:
        errs.append(errors.not_supported("propagationPolicy", policy, [*POLICIES, "nil"]))
    dry_run = opts.get("dryRun") or []
    if any(v != DRY_RUN_ALL for v in dry_run):        # Upstream: ValidateDryRun
        shown = "[]string{" + ", ".join(errors.go_quote(v) for v in dry_run) + "}"
        errs.append(errors.not_supported("dryRun", GoSyntax(shown), [DRY_RUN_ALL]))
    return errs
