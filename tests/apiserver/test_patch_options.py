"""A PATCH's PatchOptions, checked before anything is read: upstream's ValidatePatchOptions and
ValidateFieldManager (apimachinery pkg/apis/meta/v1/validation/validation.go), which
PatchResource (apiserver handlers/patch.go) answers with a 422 on PatchOptions.meta.k8s.io "".
"""
from __future__ import annotations

from typing import Any

import pytest

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}}


@pytest.mark.parametrize("content_type,query,message", [
    (APPLY, {}, "fieldManager: Required value: is required for apply patch"),
    (MERGE, {"force": "false"}, "force: Forbidden: may not be specified for non-apply patch"),
    (APPLY, {"fieldManager": "m" * 129}, "fieldManager: Too long: may not be more than 128 bytes"),
    (MERGE, {"fieldManager": "a\tb"}, 'fieldManager: Invalid value: "a\\tb": invalid character U+0009 (at position 1)'),
])
async def test_bad_patch_options_are_a_422_before_anything_is_read(api: Any, content_type: str,
                                                                    query: dict[str, str], message: str) -> None:
    assert (await api.create(api.CMS, api.configmap("cm"))).status == 201
    body = CM if content_type == APPLY else {"data": {"k": "x"}}
    r = await api.call("PATCH", f"{api.CMS}/cm", query, body=body, headers={"content-type": content_type})
    assert (r.status, r.json["message"]) == (422, f'PatchOptions.meta.k8s.io "" is invalid: {message}'), r.json
    assert r.json["details"]["kind"] == "PatchOptions" and r.json["details"]["group"] == "meta.k8s.io"
    assert (await api.get(f"{api.CMS}/cm")).json.get("data") != {"k": "x"}


async def test_an_apply_names_its_manager(api: Any) -> None:
    r = await api.call("PATCH", f"{api.CMS}/cm", {"fieldManager": "mgr"}, body=CM, headers={"content-type": APPLY})
    assert r.status == 201 and r.json["metadata"]["managedFields"][0]["manager"] == "mgr", r.json
