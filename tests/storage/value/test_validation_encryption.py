"""ValidateEncryptionConfiguration: upstream's validation_encryption_test.go tables as facts.

Upstream's structure cases use a KMS provider as filler where the provider does not matter;
here that filler is an aescbc provider (kubeplane refuses KMS, tested on its own below).
"""
from __future__ import annotations

import pytest

from kubeplane.api.errors import aggregate
from kubeplane.storage.value.types_encryption import (
    AESConfiguration,
    EncryptionConfiguration,
    IdentityConfiguration,
    Key,
    KMSConfiguration,
    ProviderConfiguration,
    ResourceConfiguration,
    SecretboxConfiguration,
)
from kubeplane.storage.value.validation_encryption import (
    AES_KEY_SIZES,
    parse_group_resource,
    validate_encryption_configuration,
    validate_key,
)

SECRET = "A/j5CnrWGB83ylcPkuUhm/6TSyrQtsNJtDPwPHNOj4Q="
FOO = (Key("foo", SECRET),)
AESCBC = ProviderConfiguration(aescbc=AESConfiguration(FOO))


def one(resources: list[str], *providers: ProviderConfiguration) -> EncryptionConfiguration:
    return EncryptionConfiguration((ResourceConfiguration(tuple(resources), providers or (AESCBC,)),))


def messages(c: EncryptionConfiguration | None) -> list[str]:
    return [str(e) for e in validate_encryption_configuration(c)]


OVERLAP = ("using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as "
           "they will be masked")
DUPLICATE = "the same resource cannot be specified multiple times"


@pytest.mark.parametrize(("config", "want"), [
    pytest.param(None, ["resources: Required value: EncryptionConfiguration can't be nil"],
                 id="nil encryption config"),
    pytest.param(EncryptionConfiguration(), ["resources: Required value: at least one resources is required"],
                 id="empty encryption config"),
    pytest.param(EncryptionConfiguration((ResourceConfiguration((), (AESCBC,)),)),
                 ["resources[0].resources: Required value: at least one resources[0].resources is required"],
                 id="no k8s resources"),
    pytest.param(EncryptionConfiguration((ResourceConfiguration(("secrets",), ()),)),
                 ["resources[0].providers: Required value: at least one resources[0].providers is required"],
                 id="no providers"),
    pytest.param(one(["secrets"], ProviderConfiguration(aesgcm=AESConfiguration(FOO), aescbc=AESConfiguration(FOO))),
                 [('resources[0].providers[0]: Invalid value: {"AESGCM":{"Keys":[{"Name":"foo","Secret":"REDACTED"}]},'
                  '"AESCBC":{"Keys":[{"Name":"foo","Secret":"REDACTED"}]},"Secretbox":null,"Identity":null,'
                  '"KMS":null}: more than one provider specified in a single element, should split into different '
                  'list elements')],
                 id="multiple providers"),
    pytest.param(one(["secrets"], ProviderConfiguration(aesgcm=AESConfiguration(FOO))), [], id="valid config"),
    pytest.param(one(["events.events.k8s.io"]),
                 [('resources[0].resources[0]: Invalid value: "events.events.k8s.io": \'*.events.k8s.io\' objects '
                  "are stored using the 'events' API group in etcd. Use 'events' instead in the config file")],
                 id="config should error when events.k8s.io group is used"),
    pytest.param(EncryptionConfiguration((ResourceConfiguration(("secrets",), (AESCBC,)),
                                          ResourceConfiguration(("secret", "events.events.k8s.io"), (AESCBC,)))),
                 [('resources[1].resources[1]: Invalid value: "events.events.k8s.io": \'*.events.k8s.io\' objects '
                  "are stored using the 'events' API group in etcd. Use 'events' instead in the config file")],
                 id="config should error when events.k8s.io group is used later in the list"),
    pytest.param(one(["*.events.k8s.io"]),
                 [('resources[0].resources[0]: Invalid value: "*.events.k8s.io": \'*.events.k8s.io\' objects '
                  "are stored using the 'events' API group in etcd. Use 'events' instead in the config file")],
                 id="config should error when *.events.k8s.io group is used"),
    pytest.param(one(["*.extensions"]),
                 [('resources[0].resources[0]: Invalid value: "*.extensions": \'extensions\' group has been '
                  "removed and cannot be used for encryption")],
                 id="config should error when extensions group is used"),
    pytest.param(one(["foo.extensions"]),
                 [('resources[0].resources[0]: Invalid value: "foo.extensions": \'extensions\' group has been '
                  "removed and cannot be used for encryption")],
                 id="config should error when foo.extensions group is used"),
    pytest.param(one(["*"]),
                 [('resources[0].resources[0]: Invalid value: "*": use \'*.\' to encrypt all the resources from '
                  "core API group or *.* to encrypt all resources")],
                 id="config should error when '*' resource is used"),
    pytest.param(one(["apiServerIPInfo"]),
                 [('resources[0].resources[0]: Invalid value: "apiServerIPInfo": resource name should not contain '
                  "capital letters")],
                 id="should error when resource name has capital letters"),
    *(pytest.param(one([name]),
                   [(f'resources[0].resources[0]: Invalid value: "{name}": resources which do not have REST API/s '
                    "cannot be encrypted")],
                   id=f"should error when resource name is {name}")
      for name in ("apiserveripinfo", "serviceipallocations", "servicenodeportallocations")),
    pytest.param(one(["*.apps", "*."]), [],
                 id="should not error when '*.apps' and '*.' are used within the same resource list"),
    pytest.param(one(["*.", "foos.*"]),
                 [('resources[0].resources[1]: Invalid value: "foos.*": encrypting the same resource across groups '
                  "is not supported")],
                 id="should error when the same resource across groups is encrypted"),
    pytest.param(one(["secrets", "secrets"]),
                 [f'resources[0].resources: Invalid value: ["secrets","secrets"]: {DUPLICATE}'],
                 id="should error when secrets are specified twice within the same resource list"),
    pytest.param(one(["secrets"] * 4),
                 [f'resources[0].resources: Invalid value: ["secrets","secrets","secrets","secrets"]: {DUPLICATE}'],
                 id="should error once when secrets are specified many times within the same resource list"),
    pytest.param(one(["secrets", "secrets."]),
                 [f'resources[0].resources: Invalid value: ["secrets","secrets."]: {DUPLICATE}'],
                 id="should error when secrets are specified twice within the same resource list, via dot"),
    pytest.param(one(["*.apps", "*.", "*.*"]),
                 [f'resources[0].resources: Invalid value: ["*.apps","*.","*.*"]: {OVERLAP}'],
                 id="should error when '*.apps' and '*.' and '*.*' are used within the same resource list"),
    pytest.param(one(["deployments.apps", "*."]), [],
                 id="should not error when deployments.apps are specified with '*.' within the same resource list"),
    pytest.param(one(["deployments.apps", "*.apps"]),
                 [f'resources[0].resources: Invalid value: ["deployments.apps","*.apps"]: {OVERLAP}'],
                 id="should error when deployments.apps are specified with '*.apps' within the same resource list"),
    pytest.param(one(["secrets", "*."]),
                 [f'resources[0].resources: Invalid value: ["secrets","*."]: {OVERLAP}'],
                 id="should error when secrets are specified with '*.' within the same resource list"),
    pytest.param(one(["pods", "*."]),
                 [f'resources[0].resources: Invalid value: ["pods","*."]: {OVERLAP}'],
                 id="should error when pods are specified with '*.' within the same resource list"),
    pytest.param(one(["secrets", "*.*"]),
                 [f'resources[0].resources: Invalid value: ["secrets","*.*"]: {OVERLAP}'],
                 id="should error when other resources are specified with '*.*' within the same resource list"),
    pytest.param(one(["*.", "*.*"]),
                 [f'resources[0].resources: Invalid value: ["*.","*.*"]: {OVERLAP}'],
                 id="should error when both '*.' and '*.*' are used within the same resource list"),
])
def test_structure(config: EncryptionConfiguration | None, want: list[str]) -> None:
    """Upstream: TestStructure (the cases that are not about KMS)."""
    assert messages(config) == want


PATH = "resources[0].provider[0].key[0]"


@pytest.mark.parametrize(("key", "want"), [
    pytest.param(Key("foo", "c2VjcmV0IGlzIHNlY3VyZQ=="), [], id="valid key"),
    pytest.param(Key("", "c2VjcmV0IGlzIHNlY3VyZQ=="),
                 [f"{PATH}.name: Required value: name is a mandatory field for a key"], id="key without name"),
    pytest.param(Key("foo", ""),
                 [f"{PATH}.secret: Required value: secret is a mandatory field for a key"], id="key without secret"),
    pytest.param(Key("foo", "P@ssword"),
                 [f'{PATH}.secret: Invalid value: "REDACTED": secrets must be base64 encoded'],
                 id="key is not base64 encoded"),
    pytest.param(Key("foo", "cGFzc3dvcmQK"),
                 [(f'{PATH}.secret: Invalid value: "REDACTED": secret is not of the expected length, got 9, '
                  "expected one of [16 24 32]")],
                 id="key is not of expected length"),
])
def test_key(key: Key, want: list[str]) -> None:
    """Upstream: TestKey."""
    assert [str(e) for e in validate_key(key, PATH, AES_KEY_SIZES)] == want


@pytest.mark.parametrize("secret", [
    "c2VjcmV0IGlzIHNlY3VyZQ",          # padding missing: Go's StdEncoding refuses it
    "c2VjcmV0 IGlzIHNlY3VyZQ==",      # a space
])
def test_base64_is_go_std_encoding(secret: str) -> None:
    assert [str(e) for e in validate_key(Key("k", secret), "p", AES_KEY_SIZES)] == [
        'p.secret: Invalid value: "REDACTED": secrets must be base64 encoded']


def test_base64_ignores_newlines_like_go() -> None:
    assert validate_key(Key("k", "c2VjcmV0IGlz\nIHNlY3VyZQ==\r\n"), "p", AES_KEY_SIZES) == []


def test_secretbox_needs_32_bytes_and_aes_16_24_32() -> None:
    sixteen = "c2VjcmV0IGlzIHNlY3VyZQ=="
    c = one(["secrets"], ProviderConfiguration(secretbox=SecretboxConfiguration((Key("a", sixteen),))),
            ProviderConfiguration(aesgcm=AESConfiguration((Key("b", SECRET[:-1] + "!"),))))
    assert messages(c) == [
        ('resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the '
        "expected length, got 16, expected one of [32]"),
        'resources[0].providers[1].aesgcm.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded']


def test_provider_without_keys() -> None:
    assert messages(one(["secrets"], ProviderConfiguration(aescbc=AESConfiguration()))) == [
        "resources[0].providers[0].aescbc.keys: Required value: at least one keys is required"]


def test_empty_provider() -> None:
    assert messages(one(["secrets"], ProviderConfiguration())) == [
        ('resources[0].providers[0]: Invalid value: {"AESGCM":null,"AESCBC":null,"Secretbox":null,"Identity":null,'
        '"KMS":null}: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, '
        "Identity")]


def test_duplicate_key_names_in_one_provider() -> None:
    """kubeplane's addition: upstream accepts them."""
    c = one(["secrets"], ProviderConfiguration(aescbc=AESConfiguration((Key("k", SECRET), Key("k", SECRET)))),
            ProviderConfiguration(secretbox=SecretboxConfiguration((Key("k", SECRET),))))   # another provider: fine
    assert messages(c) == ['resources[0].providers[0].aescbc.keys[1].name: Duplicate value: "k"']


def test_kms_is_forbidden() -> None:
    c = one(["secrets"], ProviderConfiguration(kms=KMSConfiguration("v2", "p", "unix:///p.sock")),
            ProviderConfiguration(identity=IdentityConfiguration()))
    assert messages(c) == [
        ("resources[0].providers[0].kms: Forbidden: KMS providers are not supported by kubeplane; use aescbc, "
        "aesgcm, secretbox or identity (docs/encryption-at-rest.md)")]


def test_errors_are_aggregated_as_upstream() -> None:
    """ToAggregate: several errors read "[a, b]" (the loader's message)."""
    errs = validate_encryption_configuration(one(["Secrets", "foos.*"]))
    assert aggregate(errs) == (
        '[resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters, '
        'resources[0].resources[1]: Invalid value: "foos.*": encrypting the same resource across groups is not '
        "supported]")


@pytest.mark.parametrize(("text", "group", "resource", "string"), [
    ("secrets", "", "secrets", "secrets"),
    ("secrets.", "", "secrets", "secrets"),
    ("deployments.apps", "apps", "deployments", "deployments.apps"),
    ("pandas.awesome.bears.example", "awesome.bears.example", "pandas", "pandas.awesome.bears.example"),
    ("*.", "", "*", "*"),
    ("*.*", "*", "*", "*.*"),
])
def test_parse_group_resource(text: str, group: str, resource: str, string: str) -> None:
    """Upstream: schema.ParseGroupResource and GroupResource.String."""
    gr = parse_group_resource(text)
    assert (gr.group, gr.resource, str(gr)) == (group, resource, string)
