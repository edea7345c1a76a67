"""Encryption at rest against `kubeplane up`: a Secret's value never reaches the data dir in
clear text (nor base64, which is how a Secret's data travels), upstream's rotation works, and a
bad or wrong configuration is one line. docs/encryption-at-rest.md is the user's side of this."""
from __future__ import annotations

import base64
import pathlib
import signal
import stat
import uuid

import pytest
import yaml

from .cluster import Cluster
from .test_up import one_error_line, run_up

ENVELOPE = b"k8s:enc:secretbox:v1:"


def state_bytes(data_dir: pathlib.Path) -> bytes:
    """state.db with its -wal: everything SQLite holds on disk."""
    return b"".join(p.read_bytes() for p in sorted(data_dir.glob("state.db*")))


def secretbox_config(*names: str) -> dict:
    keys = [{"name": n, "secret": base64.b64encode(n.encode().ljust(32, b"-")).decode()} for n in names]
    return {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
            "resources": [{"resources": ["secrets"], "providers": [{"secretbox": {"keys": keys}}, {"identity": {}}]}]}


def write_config(path: pathlib.Path, config: dict) -> pathlib.Path:
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def secret_value(c: Cluster, name: str) -> str:
    data = c.get_json("secret", name)["data"]["password"]
    return base64.b64decode(data).decode()


def test_secrets_are_sealed_by_default_and_readable_after_a_restart() -> None:
    value, note = f"s3cr3t-{uuid.uuid4()}", f"public-{uuid.uuid4()}"
    c = Cluster(nodes=0).start()
    try:
        c.kubectl("create", "secret", "generic", "db", f"--from-literal=password={value}")
        c.kubectl("create", "configmap", "plain", f"--from-literal=note={note}")
        config = c.data_dir / "encryption-config.yaml"
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        c.stop(signal.SIGKILL)                     # whatever is on disk, WAL included
        on_disk = state_bytes(c.data_dir)
        assert ENVELOPE + b"key1:" in on_disk
        assert note.encode() in on_disk                    # a ConfigMap is not encrypted by default ...
        assert value.encode() not in on_disk               # ... a Secret is: neither in clear text
        assert base64.b64encode(value.encode()) not in on_disk       # nor as its data travels
        c.start()
        assert secret_value(c, "db") == value
    finally:
        c.cleanup()


def test_key_rotation_as_upstream_documents_it(tmp_path: pathlib.Path) -> None:
    """Add key2 second, restart; move it first, restart (every stored value is sealed with key2
    at that open); drop key1, restart: the Secret is still readable."""
    value = f"rotate-{uuid.uuid4()}"
    config = write_config(tmp_path / "enc.yaml", secretbox_config("key1"))
    c = Cluster(nodes=0, extra_args=("--encryption-provider-config", str(config))).start()
    try:
        c.kubectl("create", "secret", "generic", "db", f"--from-literal=password={value}")
        for names in (("key1", "key2"), ("key2", "key1"), ("key2",)):
            c.stop()
            write_config(config, secretbox_config(*names))
            c.start()
            assert secret_value(c, "db") == value
        c.stop()
        on_disk = state_bytes(c.data_dir)
        assert ENVELOPE + b"key2:" in on_disk and ENVELOPE + b"key1:" not in on_disk
    finally:
        c.cleanup()


def test_a_store_written_with_another_key_is_refused_in_one_line(tmp_path: pathlib.Path) -> None:
    c = Cluster(nodes=0).start()
    try:
        c.kubectl("create", "secret", "generic", "db", "--from-literal=password=x")
        c.stop()
        other = write_config(tmp_path / "other.yaml", secretbox_config("other"))
        line = one_error_line(run_up("--data-dir", str(c.data_dir), "--port", "0", "--nodes", "0",
                                     "--encryption-provider-config", str(other)))
        assert "cannot read /registry/secrets/default/db" in line and "--encryption-provider-config" in line
    finally:
        c.cleanup()


@pytest.mark.parametrize("config, message", [
    pytest.param({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
                  "resources": [{"resources": ["secrets"], "providers": [{"secretbox": {"keys": [
                      {"name": "k", "secret": base64.b64encode(b"short").decode()}]}}]}]},
                 "secret is not of the expected length", id="short key"),
    pytest.param({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
                  "resources": [{"resources": ["secrets"], "providers": [{"kms": {"name": "k"}}]}]},
                 "kms", id="kms"),
])
def test_a_bad_configuration_is_one_line(tmp_path: pathlib.Path, config: dict, message: str) -> None:
    path = write_config(tmp_path / "enc.yaml", config)
    line = one_error_line(run_up("--data-dir", str(tmp_path / "data"), "--port", "0", "--nodes", "0",
                                 "--encryption-provider-config", str(path)))
    assert line.startswith("Error: --encryption-provider-config: ") and message in line
