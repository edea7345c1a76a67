"""Loading EncryptionConfiguration files: upstream's config_test.go and testdata as facts.

Upstream's valid configs also list KMS providers, which kubeplane refuses: here they are the
same files without those entries.
"""
from __future__ import annotations

import base64
import os
import pathlib
import stat

import pytest
from encryption_vectors import GO_BOX, LEGACY_GCM

from kubeplane.api.resources import RESOURCES
from kubeplane.storage.value import (
    EncryptionConfigError,
    StorageKeyTransformer,
    TransformError,
    ensure_default_config,
    load_encryption_config,
    new_storage_transformer,
)
from kubeplane.storage.value.encrypt.identity import IDENTITY
from kubeplane.storage.value.encryptionconfig import (
    transformer_from_overrides,
    transformer_overrides,
)
from kubeplane.storage.value.transformer import PrefixTransformers
from kubeplane.storage.value.types_encryption import decode
from kubeplane.storage.value.validation_encryption import parse_group_resource

HEADER = "kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\n"
AESGCM = """\
      - aesgcm:
          keys:
            - name: key1
              secret: c2VjcmV0IGlzIHNlY3VyZQ==
            - name: key2
              secret: dGhpcyBpcyBwYXNzd29yZA==
"""
AESCBC = AESGCM.replace("aesgcm", "aescbc")
SECRETBOX = """\
      - secretbox:
          keys:
            - name: key1
              secret: YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY=
"""
IDENTITY_YAML = "      - identity: {}\n"


def config(*providers: str, resources: str = "secrets") -> str:
    items = "".join(f"      - {r}\n" for r in resources.split(","))
    return HEADER + "resources:\n  - resources:\n" + items + "    providers:\n" + "".join(providers)


# testdata/valid-configs/*-first.yaml without their kms entries
VALID = {
    "aesGcmFirst": config(AESGCM, SECRETBOX, AESCBC, IDENTITY_YAML),
    "aesCbcFirst": config(AESCBC, IDENTITY_YAML, SECRETBOX, AESGCM),
    "secretboxFirst": config(SECRETBOX, AESCBC, IDENTITY_YAML, AESGCM),
    "identityFirst": config(IDENTITY_YAML, AESGCM, AESCBC, SECRETBOX, resources="secrets,namespaces"),
}


def write(tmp_path: pathlib.Path, text: str, name: str = "config.yaml") -> pathlib.Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def secrets_transformer(tmp_path: pathlib.Path, text: str) -> PrefixTransformers:
    t = load_encryption_config(write(tmp_path, text)).transformers[parse_group_resource("secrets")]
    assert isinstance(t, PrefixTransformers)
    return t


def test_encryption_provider_config_correct(tmp_path: pathlib.Path) -> None:
    """Upstream: TestEncryptionProviderConfigCorrect: each config writes with its first
    provider; every other config reads it back, stale unless it is the same one."""
    transformers = {name: secrets_transformer(tmp_path, text) for name, text in VALID.items()}
    for writer_name, writer in transformers.items():
        stored = writer.transform_to_storage("0123456789", b"abcdefghijklmnopqrstuvwxyz")
        for reader_name, reader in transformers.items():
            got, stale = reader.transform_from_storage("0123456789", stored)
            assert got == b"abcdefghijklmnopqrstuvwxyz", (writer_name, reader_name)
            assert stale == (reader_name != writer_name), (writer_name, reader_name)


@pytest.mark.parametrize(("name", "prefix"), [
    ("aesGcmFirst", b"k8s:enc:aesgcm:v1:key1:"),
    ("aesCbcFirst", b"k8s:enc:aescbc:v1:key1:"),
    ("secretboxFirst", b"k8s:enc:secretbox:v1:key1:"),
])
def test_writes_upstreams_envelope(tmp_path: pathlib.Path, name: str, prefix: bytes) -> None:
    assert secrets_transformer(tmp_path, VALID[name]).transform_to_storage("/k", b"v").startswith(prefix)


def test_reads_values_as_kube_apiserver_stores_them(tmp_path: pathlib.Path) -> None:
    """Envelopes assembled from upstream's and Go's recorded ciphertexts read back through a
    configuration: the prefix, the key name and the sealed bytes are all upstream's."""
    sb_key = base64.b64encode(b"\x01" * 32).decode()
    gcm_key = base64.b64encode(b"snorlax_awesomes").decode()
    text = config(f"      - secretbox:\n          keys:\n            - name: k1\n              secret: {sb_key}\n",
                  f"      - aesgcm:\n          keys:\n            - name: legacy\n              secret: {gcm_key}\n")
    t = secrets_transformer(tmp_path, text)
    assert t.transform_from_storage("/k", b"k8s:enc:secretbox:v1:k1:" + b"\x02" * 24 + GO_BOX) == (b"\x03" * 64, False)
    assert t.transform_from_storage("bamboo", b"k8s:enc:aesgcm:v1:legacy:" + LEGACY_GCM) == (
        b"pandas are the best", True)


def test_legacy_config(tmp_path: pathlib.Path) -> None:
    """Upstream: TestLegacyConfig (kind EncryptionConfig, apiVersion v1), kms entry dropped."""
    text = "kind: EncryptionConfig\napiVersion: v1\n" + config(
        IDENTITY_YAML, AESGCM, AESCBC, SECRETBOX, resources="secrets,namespaces").removeprefix(HEADER)
    c = decode(text.encode())
    assert c.resources[0].resources == ("secrets", "namespaces")
    providers = c.resources[0].providers
    assert providers[0].identity is not None
    assert providers[1].aesgcm is not None and [k.name for k in providers[1].aesgcm.keys] == ["key1", "key2"]
    assert providers[1].aesgcm.keys[1].secret == "dGhpcyBpcyBwYXNzd29yZA=="
    assert providers[3].secretbox is not None
    assert load_encryption_config(write(tmp_path, text)).transformers.keys() == {("", "secrets"), ("", "namespaces")}


# testdata/valid-configs/aes/*.json: rotation with two providers, and with two keys in one
AES_A, AES_B = "Owq7A4JrJpSjrvH8kXkvl4JmOLzvZ6j9BcGRkR8OPQ4=", "+qcnfOFX3aRXM9PuY7lQXDWYIQ3GWUdBc3nYBo91SCA="


def json_config(providers: str) -> str:
    return ('{"kind": "EncryptionConfiguration", "apiVersion": "apiserver.config.k8s.io/v1",'
            ' "resources": [{"resources": ["ignored"], "providers": [' + providers + ']}]}')


def aescbc(*keys: tuple[str, str]) -> str:
    return '{"aescbc": {"keys": [' + ",".join(f'{{"name": "{n}", "secret": "{s}"}}' for n, s in keys) + "]}}"


@pytest.mark.parametrize(("first", "first_prefix", "second", "second_prefix"), [
    (aescbc(("1", AES_A)) + "," + aescbc(("2", AES_B)), b"k8s:enc:aescbc:v1:1:",
     aescbc(("2", AES_B)) + "," + aescbc(("1", AES_A)), b"k8s:enc:aescbc:v1:2:"),
    (aescbc(("A", AES_A), ("B", AES_B)), b"k8s:enc:aescbc:v1:A:",
     aescbc(("B", AES_B), ("A", AES_A)), b"k8s:enc:aescbc:v1:B:"),
], ids=["overlapping providers", "multiple keys"])
def test_cbc_key_rotation(tmp_path: pathlib.Path, first: str, first_prefix: bytes, second: str,
                          second_prefix: bytes) -> None:
    """Upstream: TestCBCKeyRotationWithOverlappingProviders / WithoutOverlappingProviders."""
    def transformer(providers: str) -> PrefixTransformers:
        loaded = load_encryption_config(write(tmp_path, json_config(providers), "c.json")).transformers
        assert list(loaded) == [("", "ignored")]
        t = loaded[("", "ignored")]
        assert isinstance(t, PrefixTransformers)
        return t
    p = transformer(first)
    out = p.transform_to_storage("authenticated_data", b"firstvalue")
    assert out.startswith(first_prefix)
    assert p.transform_from_storage("authenticated_data", out) == (b"firstvalue", False)
    assert p.transform_from_storage("incorrect_context", out) == (b"firstvalue", False)   # CBC: no AAD
    p = transformer(second)
    assert p.transform_from_storage("authenticated_data", out) == (b"firstvalue", True)
    out = p.transform_to_storage("authenticated_data", b"firstvalue")
    assert out.startswith(second_prefix)
    assert p.transform_from_storage("authenticated_data", out) == (b"firstvalue", False)


def rules(*lists: tuple[str, str]) -> str:
    """A config of several resource lists, each (resources, key name) with one aescbc key."""
    body = "".join(
        "  - resources:\n" + "".join(f"      - '{r}'\n" for r in res.split(",")) +
        f"    providers:\n      - aescbc:\n          keys:\n            - name: {name}\n"
        f"              secret: {AES_A}\n" for res, name in lists)
    return HEADER + "resources:\n" + body


@pytest.mark.parametrize(("lists", "error"), [
    ([("*.", "a"), ("*.", "b")], 'resource "*." is masked by earlier rule "*."'),
    ([("*.foo", "a"), ("*.foo", "b")], 'resource "*.foo" is masked by earlier rule "*.foo"'),
    ([("*.*", "a"), ("*.*", "b")], 'resource "*.*" is masked by earlier rule "*.*"'),
    ([("configmaps", "a"), ("*.,secrets", "b")], 'resource "secrets" is masked by earlier rule "*."'),
    ([("configmaps", "a"), ("*.*,secrets", "b")], 'resource "secrets" is masked by earlier rule "*.*"'),
    ([("configmaps,*.*", "a"), ("*.", "b")], 'resource "*." is masked by earlier rule "*.*"'),
    ([("configmaps,secrets", "a"), ("*.*", "b")], None),
    ([("configmaps,secrets,*.*", "a")], None),
])
def test_wildcard_masking(lists: list[tuple[str, str]], error: str | None) -> None:
    """Upstream: TestWildcardMasking (the builder's check across resource lists)."""
    if error is None:
        transformer_overrides(decode(rules(*lists).encode()))
    else:
        with pytest.raises(EncryptionConfigError) as exc:
            transformer_overrides(decode(rules(*lists).encode()))
        assert str(exc.value) == error


def test_wildcard_masking_is_reported_by_the_loader(tmp_path: pathlib.Path) -> None:
    """Validation sees one list at a time; masking across lists is the builder's error."""
    path = write(tmp_path, rules(("*.", "a"), ("secrets", "b")))
    with pytest.raises(EncryptionConfigError) as exc:
        load_encryption_config(path)
    assert str(exc.value) == ('error while building transformers: resource "secrets" is masked by '
                              'earlier rule "*."')


def test_wildcard_structure() -> None:
    """Upstream: TestWildcardStructure ("should not result in error"): which rule serves each
    resource, by the prefix its writes carry."""
    overrides = transformer_overrides(decode(rules(
        ("configmaps,*.apps", "kms"), ("secrets", "another-kms"), ("*.", "fancy"),
        ("*.*", "yet-another-provider")).encode()))
    expected = {
        "configmaps": "kms", "secrets": "another-kms", "events": "fancy", "deployments.apps": "kms",
        "pods": "fancy", "pandas": "fancy", "pandas.bears": "yet-another-provider", "jobs.apps": "kms",
    }
    for resource, key_name in expected.items():
        t = transformer_from_overrides(overrides, parse_group_resource(resource))
        assert t.transform_to_storage("/k", b"v").startswith(f"k8s:enc:aescbc:v1:{key_name}:".encode()), resource


def test_unlisted_resources_get_identity() -> None:
    overrides = transformer_overrides(decode(rules(("secrets", "a")).encode()))
    assert transformer_from_overrides(overrides, parse_group_resource("configmaps")) is IDENTITY


# --- errors with upstream's messages --------------------------------------------------------

def test_missing_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(EncryptionConfigError) as exc:
        load_encryption_config(path)
    assert str(exc.value) == (f'error while parsing file: error while loading file: error reading encryption '
                              f'provider configuration file "{path}": open {path}: no such file or directory')


def test_empty_file(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, "")
    with pytest.raises(EncryptionConfigError) as exc:
        load_encryption_config(path)
    assert str(exc.value) == (f'error while parsing file: error while loading file: encryption provider '
                              f'configuration file "{path}" is empty')


@pytest.mark.parametrize(("text", "detail"), [
    # testdata/invalid-configs/invalid-typo.yaml (verbatim): the strict decoder names the field
    (HEADER + """resources:
  - resources:
      - secrets
    providers:
      - aesgcm:
          keys:
            - name: key1
              secret: c2VjcmV0IGlzIHNlY3VyZQ==
            - name: key2
              secret: dGhpcyBpcyBwYXNzd29yZA==
      - secretbox:
          keys:
            - name: key1
              secret: YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY=
      - kms:
          name: testprovider
          endpoint: unix:///tmp/testprovider.sock
          cachesize: 10
      - kms:
          apiVersion: v2
          name: testproviderv2
          endpoint: unix:///tmp/testprovider.sock
          timeout: 10s
          pandas: are the best  # true, but still a typo
      - aescbc:
          keys:
            - name: key1
              secret: c2VjcmV0IGlzIHNlY3VyZQ==
            - name: key2
              secret: dGhpcyBpcyBwYXNzd29yZA==
      - identity: {}
""", 'strict decoding error: unknown field "resources[0].providers[3].kms.pandas"'),
    # testdata/invalid-configs/kms/invalid-gvk.yaml: "kinds" for "kind"
    ("kinds: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\nresources: []\n",
     "Object 'Kind' is missing in the file"),
    # testdata/invalid-configs/kms/invalid-config-type.yaml
    ("kind: EncryptionConfigurations\napiVersion: apiserver.config.k8s.io/v1\nresources: []\n",
     'no kind "EncryptionConfigurations" is registered for version "apiserver.config.k8s.io/v1"'),
    ("kind: EncryptionConfiguration\nresources: []\n", "Object 'apiVersion' is missing in the file"),
    ("kind: AdmissionConfiguration\napiVersion: apiserver.config.k8s.io/v1\n",
     "got unexpected config type: apiserver.config.k8s.io/v1, Kind=AdmissionConfiguration"),
    (HEADER + "resources:\n  - resources: secrets\n",
     ("json: cannot unmarshal string into Go struct field ResourceConfiguration.resources.resources of type "
     "[]string")),
    (HEADER + "resources:\n  - resources: [secrets]\n    providers:\n      - aescbc:\n          keys:\n"
     "            - name: a\n              secret: 5\n",
     ("json: cannot unmarshal number into Go struct field Key.resources.providers.aescbc.keys.secret of type "
     "string")),
    (HEADER + "resources:\n  - resources: [secrets]\n    providers:\n      - foo: {}\n      - rot13: {}\n",
     ('strict decoding error: unknown field "resources[0].providers[0].foo", unknown field '
     '"resources[0].providers[1].rot13"')),
    ("- a\n- b\n", ("couldn't get version/kind; json parse error: the file is not an object with string kind "
     "and apiVersion")),
    ("kind: [unclosed\n", "error converting YAML to JSON: yaml: while parsing a flow sequence"),
])
def test_decode_errors(tmp_path: pathlib.Path, text: str, detail: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(EncryptionConfigError) as exc:
        load_encryption_config(path)
    assert str(exc.value) == (f'error while parsing file: error decoding encryption provider configuration '
                              f'file "{path}": {detail}')


def test_invalid_aes_gcm(tmp_path: pathlib.Path) -> None:
    """testdata/invalid-configs/invalid-aes-gcm.yaml: an aesgcm provider without keys."""
    path = write(tmp_path, config("      - aesgcm:\n          keys:\n"))
    with pytest.raises(EncryptionConfigError) as exc:
        load_encryption_config(path)
    assert str(exc.value) == ("error while parsing file: resources[0].providers[0].aesgcm.keys: Required value: "
                              "at least one keys is required")


def test_kms_is_refused_clearly(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, config("      - kms:\n          apiVersion: v2\n          name: p\n"
                                  "          endpoint: unix:///tmp/p.sock\n", IDENTITY_YAML))
    with pytest.raises(EncryptionConfigError) as exc:
        load_encryption_config(path)
    assert str(exc.value) == ("error while parsing file: resources[0].providers[0].kms: Forbidden: KMS providers "
                              "are not supported by kubeplane; use aescbc, aesgcm, secretbox or identity "
                              "(docs/encryption-at-rest.md)")


def test_secrets_never_appear_in_errors(tmp_path: pathlib.Path) -> None:
    secret = base64.b64encode(b"s" * 20).decode()                        # a wrong size
    text = config(f"      - aescbc:\n          keys:\n            - name: a\n              secret: {secret}\n"
                  f"        secretbox:\n          keys:\n            - name: b\n              secret: {secret}\n")
    with pytest.raises(EncryptionConfigError) as exc:
        load_encryption_config(write(tmp_path, text))
    assert secret not in str(exc.value)
    assert "REDACTED" in str(exc.value)


def test_null_fields_are_absent(tmp_path: pathlib.Path) -> None:
    """encoding/json leaves the zero value for null: a null provider list is a missing one."""
    with pytest.raises(EncryptionConfigError, match=r"resources\[0\]\.providers: Required value"):
        load_encryption_config(write(tmp_path, HEADER + "resources:\n  - resources: [secrets]\n    providers: null\n"))


# --- storage keys -> resources -----------------------------------------------------------------

def key_transformer(tmp_path: pathlib.Path, text: str) -> StorageKeyTransformer:
    return new_storage_transformer(write(tmp_path, text), RESOURCES)


def test_storage_keys_map_to_their_resources_rules(tmp_path: pathlib.Path) -> None:
    t = key_transformer(tmp_path, rules(("secrets", "s"), ("*.apps", "apps"), ("*.", "core"), ("*.*", "all")))
    assert t.transform_to_storage("/registry/secrets/ns/n", b"v").startswith(b"k8s:enc:aescbc:v1:s:")
    assert t.transform_to_storage("/registry/deployments/ns/n", b"v").startswith(b"k8s:enc:aescbc:v1:apps:")
    assert t.transform_to_storage("/registry/pods/ns/n", b"v").startswith(b"k8s:enc:aescbc:v1:core:")
    assert t.transform_to_storage("/registry/namespaces/ns", b"v").startswith(b"k8s:enc:aescbc:v1:core:")
    assert t.transform_to_storage("/registry/leases/ns/n", b"v").startswith(b"k8s:enc:aescbc:v1:all:")
    # a prefix no served resource has (a custom resource): only "*.*" can cover it
    assert t.transform_to_storage("/registry/example.com/pandas/ns/n", b"v").startswith(b"k8s:enc:aescbc:v1:all:")
    for key in ("/registry/secrets/ns/n", "/registry/pods/ns/n", "/registry/example.com/pandas/x"):
        assert t.transform_from_storage(key, t.transform_to_storage(key, b"v")) == (b"v", False)


def test_unlisted_keys_pass_through(tmp_path: pathlib.Path) -> None:
    t = key_transformer(tmp_path, config(SECRETBOX, IDENTITY_YAML))
    for key in ("/registry/pods/default/web", "/registry/configmaps/default/secrets",
                "/registry/secretsx/a", "/registry/namespaces/secrets", "/other"):
        assert t.transform_to_storage(key, b'{"a":1}') == b'{"a":1}'
        assert t.transform_from_storage(key, b'{"a":1}') == (b'{"a":1}', False)
    # but an encrypted value under an unlisted key is an error, not garbage for the decoder
    sealed = t.transform_to_storage("/registry/secrets/default/db", b'{"a":1}')
    with pytest.raises(TransformError, match="^identity transformer tried to read encrypted data$"):
        t.transform_from_storage("/registry/configmaps/default/db", sealed)


def test_both_event_apis_share_the_core_events_rule(tmp_path: pathlib.Path) -> None:
    """Upstream stores events.k8s.io Events under /registry/events/ and asks for "events"."""
    t = key_transformer(tmp_path, rules(("events", "ev")))
    assert t.transform_to_storage("/registry/events/ns/e", b"v").startswith(b"k8s:enc:aescbc:v1:ev:")


def test_plaintext_written_before_encryption_reads_as_stale(tmp_path: pathlib.Path) -> None:
    t = key_transformer(tmp_path, config(SECRETBOX, IDENTITY_YAML))
    assert t.transform_from_storage("/registry/secrets/ns/old", b'{"kind":"Secret"}') == (b'{"kind":"Secret"}', True)


def test_without_identity_plaintext_secrets_are_unreadable(tmp_path: pathlib.Path) -> None:
    """Upstream's behaviour: a value with no matching prefix is read by identity only if
    identity is configured."""
    t = key_transformer(tmp_path, config(SECRETBOX))
    with pytest.raises(TransformError, match="^no matching prefix found$"):
        t.transform_from_storage("/registry/secrets/ns/old", b'{"kind":"Secret"}')


def test_wrong_key_is_an_error(tmp_path: pathlib.Path) -> None:
    sealed = key_transformer(tmp_path, config(SECRETBOX)).transform_to_storage("/registry/secrets/a/b", b"v")
    other = config(SECRETBOX.replace("YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY=",
                                     base64.b64encode(b"z" * 32).decode()))
    with pytest.raises(TransformError, match="^output array was not large enough for encryption$"):
        key_transformer(tmp_path, other).transform_from_storage("/registry/secrets/a/b", sealed)
    renamed = config(SECRETBOX.replace("name: key1", "name: key9"))
    with pytest.raises(TransformError, match="^no matching key was found for the provided Secretbox transformer$"):
        key_transformer(tmp_path, renamed).transform_from_storage("/registry/secrets/a/b", sealed)


def test_gcm_binds_values_to_their_key(tmp_path: pathlib.Path) -> None:
    t = key_transformer(tmp_path, config(AESGCM))
    sealed = t.transform_to_storage("/registry/secrets/a/b", b"v")
    with pytest.raises(TransformError, match="authentication failed"):
        t.transform_from_storage("/registry/secrets/a/c", sealed)


def test_rotation_marks_old_values_stale(tmp_path: pathlib.Path) -> None:
    """docs/encryption-at-rest.md's steps: add key2 second, then move it first."""
    k1, k2 = base64.b64encode(b"1" * 32).decode(), base64.b64encode(b"2" * 32).decode()
    def sb(*keys: tuple[str, str]) -> str:
        return config("      - secretbox:\n          keys:\n" + "".join(
            f"            - name: {n}\n              secret: {s}\n" for n, s in keys), IDENTITY_YAML)
    key = "/registry/secrets/default/db"
    old = key_transformer(tmp_path, sb(("key1", k1))).transform_to_storage(key, b"v")
    step1 = key_transformer(tmp_path, sb(("key1", k1), ("key2", k2)))
    assert step1.transform_from_storage(key, old) == (b"v", False)
    assert step1.transform_to_storage(key, b"v").startswith(b"k8s:enc:secretbox:v1:key1:")
    step2 = key_transformer(tmp_path, sb(("key2", k2), ("key1", k1)))
    assert step2.transform_from_storage(key, old) == (b"v", True)
    new = step2.transform_to_storage(key, b"v")
    assert new.startswith(b"k8s:enc:secretbox:v1:key2:")
    step3 = key_transformer(tmp_path, sb(("key2", k2)))
    assert step3.transform_from_storage(key, new) == (b"v", False)


def test_identity_first_decrypts_away(tmp_path: pathlib.Path) -> None:
    """Turning encryption off: identity first writes plaintext, the old key still reads."""
    sealed = key_transformer(tmp_path, config(SECRETBOX)).transform_to_storage("/registry/secrets/a/b", b"v")
    t = key_transformer(tmp_path, config(IDENTITY_YAML, SECRETBOX))
    assert t.transform_from_storage("/registry/secrets/a/b", sealed) == (b"v", True)
    assert t.transform_to_storage("/registry/secrets/a/b", b"v") == b"v"


# --- the generated default ---------------------------------------------------------------------

def test_default_config_is_private_and_encrypts_secrets(tmp_path: pathlib.Path) -> None:
    data_dir = tmp_path / "data"
    path = ensure_default_config(data_dir)
    assert path == data_dir / "encryption-config.yaml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert os.listdir(data_dir) == ["encryption-config.yaml"]          # no temporary file left
    t = new_storage_transformer(path, RESOURCES)
    sealed = t.transform_to_storage("/registry/secrets/default/db", b'{"kind":"Secret"}')
    assert sealed.startswith(b"k8s:enc:secretbox:v1:key1:")
    assert b"Secret" not in sealed
    assert t.transform_from_storage("/registry/secrets/default/db", sealed) == (b'{"kind":"Secret"}', False)
    assert t.transform_from_storage("/registry/secrets/default/old", b'{"kind":"Secret"}')[1] is True
    assert t.transform_to_storage("/registry/configmaps/default/c", b"{}") == b"{}"


def test_default_config_is_reused(tmp_path: pathlib.Path) -> None:
    first = ensure_default_config(tmp_path)
    text = first.read_text()
    assert ensure_default_config(tmp_path) == first
    assert first.read_text() == text


def test_each_data_dir_gets_its_own_key(tmp_path: pathlib.Path) -> None:
    a = ensure_default_config(tmp_path / "a").read_text()
    b = ensure_default_config(tmp_path / "b").read_text()
    assert a != b
    secret = next(line.split(":", 1)[1].strip() for line in a.splitlines() if "secret:" in line)
    assert len(base64.b64decode(secret)) == 32


def test_default_config_mode_is_tightened(tmp_path: pathlib.Path) -> None:
    path = ensure_default_config(tmp_path)
    path.chmod(0o644)
    ensure_default_config(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_existing_file_is_never_replaced(tmp_path: pathlib.Path) -> None:
    """An operator's own file at that path is kept as it is (and then loaded as it is)."""
    path = write(tmp_path, config(AESGCM), "encryption-config.yaml")
    path.chmod(0o600)
    assert ensure_default_config(tmp_path).read_text() == config(AESGCM)
