"""x509 client certificates: the user a verified client certificate names.

The HTTPS server asks every client for an optional certificate and verifies it against the
cluster CA (--client-ca-file; `up` uses its own pki/ca.crt) during the TLS handshake, with the
client-auth purpose (OpenSSL's "ssl_client": an extendedKeyUsage, if present, must allow
clientAuth, as upstream's VerifyOptions.KeyUsages). The connection's protocol
(apiserver/serving.py) converts the verified certificate once per connection, with
`identity_of`, and hands it to each of the connection's requests; the authenticator only checks
the certificate is still within its validity (a kept-alive connection may outlive it).

User conversion, as upstream's CommonNameUserConversion: the subject's CommonName is the user
name (none: not authenticated by the certificate), its Organizations the groups, a UID
attribute (OID 1.3.6.1.4.1.57683.2, AllowParsingUserUIDFromCertAuth, beta and on in 1.33) the
uid, and extra authentication.kubernetes.io/credential-id "X509SHA256=<hex SHA-256 of the DER>".

Where this differs from upstream: a certificate the CA did not sign, or expired at the
handshake, fails the TLS handshake (Python's ssl verifies optional client certificates during
the handshake and has no "request, verify later" mode); upstream's Go server accepts the
connection and answers 401. A client gets no access either way.

Upstream: k8s.io/apiserver pkg/authentication/request/x509/x509.go (Authenticator,
CommonNameUserConversion, parseUIDFromCert); the client-CA option of
pkg/server/options/authentication.go (ClientCertAuthenticationOptions).
"""
from __future__ import annotations

import hashlib
import ssl
from dataclasses import dataclass
from typing import Any

from .user import ALL_AUTHENTICATED, CREDENTIAL_ID_KEY, UserInfo

UID_OID = "1.3.6.1.4.1.57683.2"      # upstream: asn1util.X509UID()
# Where the HTTPS protocol (serving.py) puts a connection's X509Identity in each request's ASGI
# scope (uvicorn passes no TLS peer certificate to the application).
X509_SCOPE_KEY = "kubeplane.x509"


@dataclass(frozen=True, slots=True)
class X509Identity:
    """A connection's verified client certificate, converted: its user (None: the certificate
    names no CommonName, so it authenticates nobody) and when it stops being valid."""
    user: UserInfo | None
    not_after: float            # seconds since the epoch
    error: str = ""             # a certificate that cannot be converted: the request's 401 reason


def common_name_user_conversion(subject: Any, der: bytes) -> tuple[UserInfo | None, str]:
    """(user, error) of a certificate's subject as ssl.getpeercert() gives it (a sequence of
    RDNs, each a sequence of (attribute, value) pairs). Upstream: CommonNameUserConversion —
    a later CommonName wins (pkix.Name.FillFromRDNSequence), Organizations in order."""
    cn = ""
    orgs: list[str] = []
    uids: list[str] = []
    for rdn in subject:
        for attr, value in rdn:
            if attr == "commonName":
                cn = value
            elif attr == "organizationName":
                orgs.append(value)
            elif attr == UID_OID:
                uids.append(value)
    if not cn:
        return None, ""
    if len(uids) > 1:
        return None, "expected 1 UID, but found multiple: [" + " ".join(uids) + "]"
    if uids and not uids[0]:
        return None, "UID cannot be an empty string"
    credential = "X509SHA256=" + hashlib.sha256(der).hexdigest()
    groups = tuple(orgs) if ALL_AUTHENTICATED in orgs else (*orgs, ALL_AUTHENTICATED)   # AuthenticatedGroupAdder
    return UserInfo(cn, uids[0] if uids else "", groups, ((CREDENTIAL_ID_KEY, (credential,)),)), ""


def identity_of(ssl_object: Any) -> X509Identity | None:
    """The verified client certificate of a TLS connection (an ssl.SSLObject), or None without
    one. Called once per connection, after the handshake."""
    try:
        cert = ssl_object.getpeercert()
        der = ssl_object.getpeercert(binary_form=True)
    except (ValueError, ssl.SSLError):          # no handshake done (never after connection_made)
        return None
    if not cert or not der:
        return None
    user, error = common_name_user_conversion(cert.get("subject", ()), der)
    return X509Identity(user, ssl.cert_time_to_seconds(cert["notAfter"]), error)

