"""Secrets as upstream stores them: stringData merged into data, data as Go's []byte decodes it.

Upstream: Convert_v1_Secret_To_core_Secret (pkg/apis/core/v1/conversion.go) merges stringData
into data ("StringData overwrites Data") when a v1 Secret becomes the stored internal one, so
stringData is never stored nor returned; encoding/json decodes each data value with
base64.StdEncoding (line breaks skipped) and writes it back canonical.
"""
from __future__ import annotations

import base64
from typing import Any

import pytest

SECRETS = "/api/v1/namespaces/default/secrets"
CMS = "/api/v1/namespaces/default/configmaps"


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def secret(name: str = "s", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


async def test_create_merges_string_data_into_data(api) -> None:
    r = await api.create(SECRETS, secret(data={"a": b64("old"), "b": b64("kept")},
                                         stringData={"a": "new", "c": "héllo"}))
    assert r.status == 201, r.json
    assert r.json["data"] == {"a": b64("new"), "b": b64("kept"), "c": b64("héllo")}
    assert "stringData" not in r.json
    stored = (await api.get(f"{SECRETS}/s")).json
    assert stored["data"] == r.json["data"] and "stringData" not in stored
    assert stored["type"] == "Opaque"


async def test_string_data_alone_makes_data(api) -> None:
    r = await api.create(SECRETS, secret(stringData={"password": "s3cr3t"}))
    assert r.json["data"] == {"password": b64("s3cr3t")} and "stringData" not in r.json


async def test_update_patch_and_apply_merge_string_data(api) -> None:
    await api.create(SECRETS, secret(data={"a": b64("1")}))
    body = (await api.get(f"{SECRETS}/s")).json
    body["stringData"] = {"a": "2", "b": "3"}
    r = await api.call("PUT", f"{SECRETS}/s", body=body)
    assert r.status == 200 and r.json["data"] == {"a": b64("2"), "b": b64("3")} and "stringData" not in r.json
    r = await api.call("PATCH", f"{SECRETS}/s", body={"stringData": {"b": "4"}},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200 and r.json["data"] == {"a": b64("2"), "b": b64("4")} and "stringData" not in r.json
    r = await api.call("PATCH", f"{SECRETS}/s", {"fieldManager": "m"},
                       body=secret(stringData={"c": "5"}), headers={"content-type": "application/apply-patch+yaml"})
    assert r.status == 200, r.json
    assert r.json["data"]["c"] == b64("5") and "stringData" not in r.json


async def test_string_data_counts_for_the_typed_secrets_required_keys(api) -> None:
    r = await api.create(SECRETS, secret(type="kubernetes.io/tls", stringData={"tls.crt": "c", "tls.key": "k"}))
    assert r.status == 201 and set(r.json["data"]) == {"tls.crt", "tls.key"}
    r = await api.create(SECRETS, secret("t2", type="kubernetes.io/tls", stringData={"tls.crt": "c"}))
    assert r.status == 422
    assert r.json["message"] == 'Secret "t2" is invalid: data[tls.key]: Required value'


async def test_string_data_keys_are_validated_as_data_keys(api) -> None:
    r = await api.create(SECRETS, secret(stringData={"bad key": "v"}))
    assert r.status == 422
    assert r.json["details"]["causes"][0]["field"] == "data[bad key]"


async def test_data_with_line_breaks_is_stored_canonical(api) -> None:
    pem_style = "aGVs\nbG8g\r\nd29y\nbGQ=\n"               # "hello world", wrapped as PEM wraps it
    r = await api.create(SECRETS, secret(data={"k": pem_style, "bits": "YR=="}))
    assert r.status == 201, r.json
    assert r.json["data"] == {"k": b64("hello world"), "bits": b64("a")}
    assert (await api.get(f"{SECRETS}/s")).json["data"] == r.json["data"]


async def test_configmap_binary_data_is_stored_canonical(api) -> None:
    r = await api.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                               "binaryData": {"b": "aGVs\nbG8="}})
    assert r.status == 201 and r.json["binaryData"] == {"b": b64("hello")}


@pytest.mark.parametrize("value,offset", [
    pytest.param("not base64!", 3, id="space"),
    pytest.param("aGVsbG8", 4, id="missing-padding"),
    pytest.param("aGVsbG8=\nx", 9, id="after-padding"),
    pytest.param("aGVs\tbG8=", 4, id="tab-is-not-a-line-break"),
])
async def test_invalid_base64_is_refused_with_gos_offset(api, value: str, offset: int) -> None:
    r = await api.create(SECRETS, secret(data={"k": value}))
    assert r.status == 400
    assert r.json["reason"] == "BadRequest"
    assert r.json["message"] == (f'Secret in version "v1" cannot be handled as a Secret: '
                                 f"illegal base64 data at input byte {offset}")
    assert (await api.get(f"{SECRETS}/s")).status == 404


async def test_size_limit_counts_decoded_bytes(api) -> None:
    exactly = base64.b64encode(bytes((1 << 20) - 1)).decode()   # 1 MiB less one byte
    r = await api.create(SECRETS, secret(data={"k": exactly}))
    assert r.status == 201, r.json["message"][:200]
    r = await api.create(SECRETS, secret("big", data={"k": exactly}, stringData={"x": "12"}))
    assert r.status == 422
    assert r.json["message"] == 'Secret "big" is invalid: data: Too long: may not be more than 1048576 bytes'
