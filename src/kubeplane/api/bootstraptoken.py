"""Bootstrap tokens: `<id>.<secret>` bearer tokens kept as Secrets of type
bootstrap.kubernetes.io/token named `bootstrap-token-<id>` in kube-system (what `kubeadm token
create` writes and `kubeadm join` uses), and the detached JWS signatures the bootstrap signer
puts in kube-public/cluster-info.

The Secret's data (base64, as stored and as the listers give it):
    token-id, token-secret          the two halves of the token
    expiration                      RFC 3339; absent: never; unparseable: expired
    usage-bootstrap-authentication  "true": the token authenticates as system:bootstrap:<id>
    usage-bootstrap-signing         "true": the signer signs cluster-info with it
    auth-extra-groups               comma-separated system:bootstrappers:* groups

Shared by the API server's authenticator and the controller-manager's token cleaner and
bootstrap signer, so it sits in the api layer.

Upstream: k8s.io/cluster-bootstrap token/api/types.go, token/util/helpers.go (ParseToken,
IsValidBootstrapTokenID), util/secrets/secrets.go (GetData, HasExpired, GetExpiration,
ParseName, GetGroups), util/tokens and token/jws/jws.go (ComputeDetachedSignature).
"""
from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import re
from collections.abc import Mapping

from .errors import go_quote

SECRET_TYPE = "bootstrap.kubernetes.io/token"           # SecretTypeBootstrapToken
SECRET_PREFIX = "bootstrap-token-"                       # BootstrapTokenSecretPrefix
TOKEN_ID_KEY = "token-id"
TOKEN_SECRET_KEY = "token-secret"
EXPIRATION_KEY = "expiration"
USAGE_AUTHENTICATION_KEY = "usage-bootstrap-authentication"
USAGE_SIGNING_KEY = "usage-bootstrap-signing"
EXTRA_GROUPS_KEY = "auth-extra-groups"
USER_PREFIX = "system:bootstrap:"                        # BootstrapUserPrefix
DEFAULT_GROUP = "system:bootstrappers"                   # BootstrapDefaultGroup
CONFIG_MAP_CLUSTER_INFO = "cluster-info"                 # ConfigMapClusterInfo (in kube-public)
KUBECONFIG_KEY = "kubeconfig"
JWS_SIGNATURE_KEY_PREFIX = "jws-kubeconfig-"

_TOKEN = re.compile(r"\A([a-z0-9]{6})\.([a-z0-9]{16})\Z")          # BootstrapTokenPattern
_TOKEN_ID = re.compile(r"\A[a-z0-9]{6}\Z")                          # BootstrapTokenIDPattern
GROUP_PATTERN = r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z"        # BootstrapGroupPattern (Go's)
_GROUP = re.compile(GROUP_PATTERN.replace(r"\z", r"\Z"))
# Go's time.RFC3339 layout as time.Parse reads it: fractional seconds allowed, a zone required.
_RFC3339 = re.compile(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})\Z")


def parse_token(token: str) -> tuple[str, str] | None:
    """(id, secret) of a token of the bootstrap form, else None. Upstream: ParseToken"""
    m = _TOKEN.match(token)
    return (m.group(1), m.group(2)) if m else None


def parse_name(name: str) -> str | None:
    """The token id a Secret's name carries (`bootstrap-token-<id>`), else None. Upstream: ParseName"""
    if not name.startswith(SECRET_PREFIX):
        return None
    token_id = name[len(SECRET_PREFIX):]
    return token_id if _TOKEN_ID.match(token_id) else None


def get_data(data: Mapping[str, str] | None, key: str) -> str:
    """A data value decoded, "" when absent or not base64 text. Upstream: GetData"""
    value = (data or {}).get(key)
    if not isinstance(value, str):
        return ""
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, ValueError):
        return ""


def expiration(data: Mapping[str, str] | None, now: float) -> tuple[float, bool]:
    """(seconds left, expired): no expiration never expires, one Go cannot parse has expired.
    Upstream: GetExpiration"""
    text = get_data(data, EXPIRATION_KEY)
    if not text:
        return 0.0, False
    if not _RFC3339.match(text):
        return 0.0, True
    try:
        at = dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:                     # the shape is right but a field is out of range
        return 0.0, True
    left = at - now
    return (left, False) if left > 0 else (0.0, True)


def groups(data: Mapping[str, str] | None) -> list[str]:
    """system:bootstrappers and the extra groups, sorted and without duplicates; ValueError
    with upstream's message for an extra group of another form. Upstream: GetGroups"""
    found = {DEFAULT_GROUP}
    extra = get_data(data, EXTRA_GROUPS_KEY)
    if extra:
        for group in extra.split(","):
            if not _GROUP.match(group):
                raise ValueError(f"bootstrap group {go_quote(group)} is invalid (must match {GROUP_PATTERN})")
            found.add(group)
    return sorted(found)


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def compute_detached_signature(content: str, token_id: str, token_secret: str) -> str:
    """The compact JWS (HS256 keyed with the token's secret half, header kid its id) of content with its
    payload left out: `<header>..<signature>`. The header is go-jose's JSON (keys sorted, no
    spaces), so kubeadm's DetachedTokenIsValid, which signs again and compares, accepts it.
    Upstream: jws.ComputeDetachedSignature"""
    header = _b64url(b'{"alg":"HS256","kid":"' + token_id.encode() + b'"}')
    payload = _b64url(content.encode())
    signature = _b64url(hmac.new(token_secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest())
    return f"{header}..{signature}"
