"""Boolean query parameters (watch, allowWatchBookmarks, sendInitialEvents, force, follow, ...)
read as upstream's parameter codec reads them: absent, "false" or "0" (any case) is false, any
other value — the empty one too — true. Upstream: runtime.Convert_Slice_string_To_bool
(apimachinery pkg/runtime/conversion.go), which RequestInfoFactory uses for ?watch
(endpoints/request/requestinfo.go) and every handler for its options."""
from __future__ import annotations

import pytest

from kubeplane.apiserver.request import Request, parse_request_info

PODS = "/api/v1/namespaces/default/pods"


@pytest.mark.parametrize(("query", "expected"), [
    ("", False),
    ("watch=false", False), ("watch=False", False), ("watch=FALSE", False), ("watch=0", False),
    ("watch=true", True), ("watch=1", True), ("watch=True", True),
    ("watch=", True), ("watch", True), ("watch=yes", True), ("watch=no", True), ("watch=00", True),
])
def test_flag_as_convert_slice_string_to_bool(query: str, expected: bool) -> None:
    assert Request.build("GET", PODS, query).flag("watch") is expected


@pytest.mark.parametrize(("query", "verb"), [
    ("watch", "watch"), ("watch=yes", "watch"), ("watch=0", "list"), ("watch=false", "list"), ("", "list"),
])
def test_request_info_watch_verb(query: str, verb: str) -> None:
    assert parse_request_info(Request.build("GET", PODS, query)).verb == verb


@pytest.mark.parametrize(("query", "expected"), [
    ("watch=false&watch=true", False), ("watch=1&watch=0", True),
])
def test_a_parameter_given_twice_is_its_first_value(query: str, expected: bool) -> None:
    req = Request.build("GET", PODS, query + "&limit=1&limit=5")
    assert req.flag("watch") is expected
    assert req.query["limit"] == "1"
