"""x509 user conversion as upstream's x509_test.go (CommonNameUserConversion): the CommonName
is the user, Organizations the groups, the UID attribute the uid, the certificate's SHA-256 the
credential id; and the identity of a real TLS connection's verified certificate."""
from __future__ import annotations

import asyncio
import hashlib
import pathlib
import ssl

import pytest
from cryptography import x509 as cx509
from cryptography.hazmat.primitives import serialization

from kubeplane.apiserver.authentication.x509 import UID_OID, common_name_user_conversion, identity_of
from kubeplane.apiserver.authentication.user import UserInfo
from kubeplane.utils.pki import ensure_pki, write_client_cert

DER = b"certificate bytes"
CRED = ("authentication.kubernetes.io/credential-id", ("X509SHA256=" + hashlib.sha256(DER).hexdigest(),))


def subject(*pairs: tuple[str, str]) -> tuple[tuple[tuple[str, str], ...], ...]:
    return tuple(((k, v),) for k, v in pairs)


@pytest.mark.parametrize("subj,want", [
    (subject(("commonName", "foo")), UserInfo("foo", "", ("system:authenticated",), (CRED,))),
    (subject(("organizationName", "a"), ("organizationName", "b"), ("commonName", "bar")),
     UserInfo("bar", "", ("a", "b", "system:authenticated"), (CRED,))),
    (subject(("commonName", "first"), ("commonName", "last")), UserInfo("last", "", ("system:authenticated",), (CRED,))),
    (subject(("commonName", "u"), (UID_OID, "1234")), UserInfo("u", "1234", ("system:authenticated",), (CRED,))),
])
def test_common_name_user_conversion(subj: tuple, want: UserInfo) -> None:
    assert common_name_user_conversion(subj, DER) == (want, "")


def test_no_common_name_authenticates_nobody() -> None:
    assert common_name_user_conversion(subject(("organizationName", "o")), DER) == (None, "")
    assert common_name_user_conversion((), DER) == (None, "")


@pytest.mark.parametrize("uids,error", [
    (("1", "2"), "expected 1 UID, but found multiple: [1 2]"),
    (("",), "UID cannot be an empty string"),
])
def test_bad_uids_are_errors(uids: tuple[str, ...], error: str) -> None:
    subj = subject(("commonName", "u"), *((UID_OID, u) for u in uids))
    assert common_name_user_conversion(subj, DER) == (None, error)


async def test_the_identity_of_a_verified_tls_client_certificate(tmp_path: pathlib.Path) -> None:
    """A real handshake: the server asks for a client certificate verified against the CA."""
    pki = ensure_pki(tmp_path, ["127.0.0.1"])
    write_client_cert(tmp_path / "pki", "bob", "bob", ["devs", "ops"])
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki.server_cert, pki.server_key)
    server_ctx.load_verify_locations(pki.ca_cert)
    server_ctx.verify_mode = ssl.CERT_OPTIONAL
    seen: list = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(identity_of(writer.get_extra_info("ssl_object")))
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    for cert in ("bob", None):
        ctx = ssl.create_default_context(cafile=pki.ca_cert)
        if cert:
            ctx.load_cert_chain(tmp_path / "pki" / f"{cert}.crt", tmp_path / "pki" / f"{cert}.key")
        _, w = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
        await asyncio.sleep(0)
        w.close()
    for _ in range(100):
        if len(seen) == 2:
            break
        await asyncio.sleep(0.01)
    server.close()
    bob, anonymous = seen
    der = cx509.load_pem_x509_certificate((tmp_path / "pki" / "bob.crt").read_bytes()).public_bytes(
        serialization.Encoding.DER)
    assert bob.user == UserInfo("bob", "", ("devs", "ops", "system:authenticated"),
                                (("authentication.kubernetes.io/credential-id",
                                  ("X509SHA256=" + hashlib.sha256(der).hexdigest(),)),))
    assert bob.not_after > 0 and anonymous is None


def test_the_admin_client_certificate_is_kubeadms(tmp_path: pathlib.Path) -> None:
    pki = ensure_pki(tmp_path, ["127.0.0.1"])
    assert pki.admin_cert is not None and pki.token_file is not None
    cert = cx509.load_pem_x509_certificate(pki.admin_cert.read_bytes())
    assert cert.subject.rfc4514_string() == "CN=kubernetes-admin,O=kubeadm:cluster-admins"
    assert cx509.oid.ExtendedKeyUsageOID.CLIENT_AUTH in cert.extensions.get_extension_for_class(
        cx509.ExtendedKeyUsage).value
    for name in ("admin.crt", "admin.key", "tokens.csv"):
        assert (tmp_path / "pki" / name).stat().st_mode & 0o777 == 0o600
    assert pki.token_file.read_text() == f'{pki.token},kubernetes-admin,,"kubeadm:cluster-admins,system:masters"\n'
