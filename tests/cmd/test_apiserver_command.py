"""`kubeplane apiserver` (kube-apiserver's flags, its refusals in its words) and `kubeplane
certs` (the shared PKI, made once)."""
from __future__ import annotations

import argparse
import pathlib

import pytest
import yaml
from cryptography import x509

from kubeplane.cmd import apiserver, certs
from kubeplane.cmd.errors import Fatal
from kubeplane.cmd.flags import ArgumentParser


def parse(*argv: str) -> argparse.Namespace:
    parser = ArgumentParser(prog="kubeplane")
    sub = parser.add_subparsers(dest="command")
    apiserver.add_parser(sub)
    certs.add_parser(sub)
    return parser.parse_args(list(argv))


@pytest.fixture
def ha(tmp_path: pathlib.Path) -> pathlib.Path:
    certs.make(tmp_path / "ha", "10.0.0.10:6443", ["10.0.0.1", "cp.example.com"], "10.96.0.0/12")
    return tmp_path / "ha"


def flags(ha: pathlib.Path, *more: str) -> list[str]:
    pki = ha / "pki"
    return ["apiserver", "--tls-cert-file", str(pki / "server.crt"), "--tls-private-key-file", str(pki / "server.key"),
            "--client-ca-file", str(pki / "ca.crt"), "--service-account-signing-key-file", str(pki / "sa.key"), *more]


def test_certs_makes_one_pki_and_kubeconfigs_to_the_endpoint(ha: pathlib.Path) -> None:
    cert = x509.load_pem_x509_certificate((ha / "pki" / "server.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    names = {str(v) for v in sans.get_values_for_type(x509.IPAddress)} | set(sans.get_values_for_type(x509.DNSName))
    assert {"10.0.0.10", "10.0.0.1", "cp.example.com", "10.96.0.1", "127.0.0.1", "kubernetes.default.svc"} <= names
    for name in ("admin.conf", "controller-manager.conf", "scheduler.conf"):
        kc = yaml.safe_load((ha / name).read_text())
        assert kc["clusters"][0]["cluster"]["server"] == "https://10.0.0.10:6443"
    for name in ("sa.key", "sa.pub", "front-proxy-ca.crt", "front-proxy-client.crt", "tokens.csv"):
        assert (ha / "pki" / name).exists()
    assert (ha / "encryption-config.yaml").exists()
    before = (ha / "pki" / "ca.crt").read_bytes()
    certs.make(ha, "10.0.0.10:6443", [], "10.96.0.0/12")          # again: what exists is kept
    assert (ha / "pki" / "ca.crt").read_bytes() == before


def test_certs_refuses_an_endpoint_without_a_port(tmp_path: pathlib.Path) -> None:
    with pytest.raises(Fatal, match="expected HOST:PORT"):
        certs.make(tmp_path / "ha", "10.0.0.10", [], "10.96.0.0/12")


def test_apiserver_defaults_are_kube_apiservers(ha: pathlib.Path) -> None:
    args = parse(*flags(ha, "--etcd-servers", "https://127.0.0.1:2379"))
    assert (args.secure_port, args.storage, args.endpoint_reconciler_type) == (6443, "etcd", "lease")
    apiserver.check(args)
    assert apiserver.advertise_address(args) == "127.0.0.1"
    assert apiserver.advertise_address(parse(*flags(ha, "--bind-address", "127.0.0.2"))) == "127.0.0.2"
    assert apiserver.advertise_address(parse(*flags(ha, "--bind-address", "0.0.0.0",
                                                    "--advertise-address", "10.0.0.1"))) == "10.0.0.1"


@pytest.mark.parametrize("drop,more,message", [
    ((), (), "--etcd-servers must be specified"),
    (("--service-account-signing-key-file",), ("--etcd-servers", "https://e:2379"),
     "service-account-signing-key-file and service-account-issuer are required flags"),
    (("--client-ca-file",), ("--etcd-servers", "https://e:2379"), "--client-ca-file must be specified"),
    ((), ("--storage", "sqlite"), "kubeplane apiserver stores in etcd"),
    ((), ("--etcd-servers", "https://e:2379", "--service-account-key-file", "/nonexistent/sa.pub"),
     "failed to parse service-account-key-file"),
])
def test_apiserver_refusals(ha: pathlib.Path, drop: tuple[str, ...], more: tuple[str, ...], message: str) -> None:
    argv = flags(ha, *more)
    for flag in drop:
        i = argv.index(flag)
        del argv[i:i + 2]
    with pytest.raises(Fatal, match=message):
        apiserver.check(parse(*argv))


def test_apiserver_needs_its_serving_certificate(ha: pathlib.Path) -> None:
    with pytest.raises(SystemExit):          # argparse: the flags are required
        parse("apiserver", "--etcd-servers", "https://e:2379")
