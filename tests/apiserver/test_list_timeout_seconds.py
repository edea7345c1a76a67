"""ListOptions.timeoutSeconds is an *int64: a value strconv.ParseInt refuses is the 400 of
DecodeParameters, for a list and a watch alike (before, a list ignored it and a watch answered
its own message). Upstream: ListResource (endpoints/handlers/get.go) and
runtime.Convert_Slice_string_To_Pointer_int64."""
from __future__ import annotations

import pytest

CMS = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize("watch", [False, True])
@pytest.mark.parametrize(("value", "why"), [("abc", "invalid syntax"), ("1.5", "invalid syntax"),
                                            ("99999999999999999999", "value out of range")])
async def test_timeout_seconds_must_be_an_int64(api, watch: bool, value: str, why: str) -> None:
    query = {"timeoutSeconds": value, **({"watch": "true"} if watch else {})}
    r = await api.get(CMS, query)
    assert r.status == 400
    assert r.json["message"] == f'strconv.ParseInt: parsing "{value}": {why}'
    assert r.json["reason"] == "BadRequest"


async def test_a_valid_one_lists(api) -> None:
    assert (await api.get(CMS, {"timeoutSeconds": "+5"})).status == 200
