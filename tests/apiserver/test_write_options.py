"""A write's CreateOptions, UpdateOptions and PatchOptions from its query, validated before its
body is read, with upstream's 422 `<kind>.meta.k8s.io "" is invalid`.

Upstream: ValidateCreateOptions, ValidateUpdateOptions, ValidatePatchOptions, ValidateFieldManager,
ValidateDryRun, ValidateFieldValidation (apimachinery pkg/apis/meta/v1/validation/validation.go),
called by endpoints/handlers/create.go, update.go and patch.go right after DecodeParameters.
"""
from __future__ import annotations

import pytest

CMS = "/api/v1/namespaces/default/configmaps"
APPLY = {"content-type": "application/apply-patch+yaml"}
MERGE = {"content-type": "application/merge-patch+json"}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}


def invalid(kind: str, *causes: tuple[str, str, str]) -> dict:
    """The 422 body: (reason, field, message) per cause."""
    msgs = [f"{f}: {m}" for _, f, m in causes]
    shown = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'{kind}.meta.k8s.io "" is invalid: {shown}', "reason": "Invalid",
            "details": {"group": "meta.k8s.io", "kind": kind,
                        "causes": [{"reason": r, "message": m, "field": f} for r, f, m in causes]},
            "code": 422}


async def test_apply_without_field_manager_is_refused(api) -> None:
    r = await api.call("PATCH", f"{CMS}/c", body=CM, headers=APPLY)
    assert r.status == 422
    assert r.json == invalid("PatchOptions", ("FieldValueRequired", "fieldManager",
                                              "Required value: is required for apply patch"))
    assert (await api.get(f"{CMS}/c")).status == 404         # nothing was created


async def test_force_on_a_non_apply_patch_is_refused(api) -> None:
    assert (await api.create(CMS, CM)).status == 201
    for force in ("true", "false"):         # a *bool: set at all is the error
        r = await api.call("PATCH", f"{CMS}/c", {"force": force}, body={"data": {"b": "2"}}, headers=MERGE)
        assert r.status == 422
        assert r.json == invalid("PatchOptions", ("FieldValueForbidden", "force",
                                                  "Forbidden: may not be specified for non-apply patch"))
    r = await api.call("PATCH", f"{CMS}/c", {"force": "true", "fieldManager": "m"}, body=CM, headers=APPLY)
    assert r.status == 200


async def test_field_manager_length_and_characters(api) -> None:
    r = await api.create(CMS, CM, {"fieldManager": "x" * 129})
    assert r.json == invalid("CreateOptions", ("FieldValueTooLong", "fieldManager",
                                               "Too long: may not be more than 128 bytes"))
    assert (await api.create(CMS, CM, {"fieldManager": "x" * 128})).status == 201
    r = await api.call("PUT", f"{CMS}/c", {"fieldManager": "a\tb"}, body=CM)
    assert r.json == invalid("UpdateOptions", ("FieldValueInvalid", "fieldManager",
                                               'Invalid value: "a\\tb": invalid character U+0009 (at position 1)'))


async def test_dry_run_and_field_validation_values(api) -> None:
    r = await api.create(CMS, CM, {"dryRun": "Foo", "fieldValidation": "Bogus"})
    assert r.json == invalid(
        "CreateOptions",
        ("FieldValueNotSupported", "dryRun", 'Unsupported value: []string{"Foo"}: supported values: "All"'),
        ("FieldValueNotSupported", "fieldValidation",
         'Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"'))
    assert (await api.create(CMS, CM, {"dryRun": "All", "fieldValidation": ""})).status == 201


@pytest.mark.parametrize("sub", ["status", "scale"])
async def test_subresource_writes_validate_their_options(api, sub: str) -> None:
    deps = "/apis/apps/v1/namespaces/default/deployments"
    r = await api.call("PATCH", f"{deps}/d/{sub}", {"force": "true"}, body={}, headers=MERGE)
    assert r.json == invalid("PatchOptions", ("FieldValueForbidden", "force",
                                              "Forbidden: may not be specified for non-apply patch"))


async def test_an_unknown_patch_type_is_a_415_first(api) -> None:
    r = await api.call("PATCH", f"{CMS}/c", {"force": "true"}, body={}, headers={"content-type": "application/foo"})
    assert r.status == 415
