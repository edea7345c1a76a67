"""`kubeplane controller-manager`'s signing and key files: a file that cannot be used stops the
start with one line, before anything connects."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from kubeplane.cmd.kubeconfig import write_kubeconfig
from kubeplane.utils.pki import ensure_pki


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubeplane", "controller-manager", *args], capture_output=True,
                          text=True, timeout=60)


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    d = tmp_path_factory.mktemp("cm")
    pki = ensure_pki(d, [])
    write_kubeconfig(d / "kubeconfig", "https://127.0.0.1:1", pki.ca_cert, pki.token)
    return d / "kubeconfig"


def test_half_of_the_signing_pair_is_refused(kubeconfig: pathlib.Path) -> None:
    res = run("--kubeconfig", str(kubeconfig), "--cluster-signing-cert-file", str(kubeconfig.parent / "pki/ca.crt"))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1] == ("Error: --cluster-signing-cert-file and --cluster-signing-key-file must "
                                           "be given together")


def test_an_unreadable_signing_file_is_one_line(kubeconfig: pathlib.Path, tmp_path: pathlib.Path) -> None:
    (tmp_path / "bad.crt").write_text("not a certificate")
    res = run("--kubeconfig", str(kubeconfig), "--cluster-signing-cert-file", str(tmp_path / "bad.crt"),
              "--cluster-signing-key-file", str(kubeconfig.parent / "pki/ca.key"))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1].startswith(
        f'Error: failed to start certificate controller: error reading CA cert file "{tmp_path / "bad.crt"}": ')


def test_an_unusable_service_account_key_is_one_line(kubeconfig: pathlib.Path, tmp_path: pathlib.Path) -> None:
    res = run("--kubeconfig", str(kubeconfig), "--service-account-private-key-file", str(tmp_path / "missing.key"))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1].startswith("Error: error reading key for service account token controller: ")
