"""Service account tokens, validated on every request: the JWTs serviceaccounts/token mints.

A bearer token is taken for a service account token when its (unverified) payload names one of
the server's issuers (--service-account-issuer); anything else is not this authenticator's
(the next one, or "invalid bearer token"). Then, as upstream's JWTTokenAuthenticator and its
validator:
1. the header's alg must be one upstream accepts (RS*, PS*, ES*: "none" and HS* are not a
   JWT here), and the signature must verify with the server's key;
2. the token's audiences (none: the API audiences) must meet the audiences asked for (the
   API audiences for a request; a TokenReview's own), else
   `token audiences ["a"] is invalid for the target audiences ["b"]`;
3. exp, nbf and iat are checked with go-jose's one-minute leeway ("service account token has
   expired", "... is not valid yet", "... is issued in the future");
4. the ServiceAccount must exist with the claimed uid and not have been deleting for more than
   the leeway; the same for a bound Secret or Pod, and for a bound Node of a node-bound token (a
   pod-bound token's node is only reported).
The user is system:serviceaccount:<ns>:<name> with uid the ServiceAccount's, groups
system:serviceaccounts and system:serviceaccounts:<ns> (and system:authenticated), extra
pod-name/pod-uid, node-name/node-uid and credential-id "JTI=<jti>".

Cost: steps 1-2 (parsing, an RSA verify: ~50 µs) are done once per token and cached, bounded
(upstream caches the token union's answers for 10 s: cachedTokenAuthenticator); steps 3-4
(a few comparisons and in-memory storage gets, ~2 µs) run on every request, so a token stops
working the moment its ServiceAccount or bound object is deleted, not a cache TTL later.
Failures are never cached (upstream's failure TTL is 0 in kube-apiserver).

Legacy Secret-based tokens (issuer kubernetes/serviceaccount) are checked by legacy.py's
validator instead of step 4. Not served: --service-account-key-file's extra verification keys.

Upstream: pkg/serviceaccount/jwt.go (JWTTokenAuthenticator.AuthenticateToken, hasCorrectIssuer),
pkg/serviceaccount/claims.go (validator.Validate), k8s.io/apiserver
pkg/authentication/serviceaccount/util.go (ServiceAccountInfo.UserInfo, MakeGroupNames),
go-jose jwt.Claims.ValidateWithLeeway (DefaultLeeway 1 minute).
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ...api.errors import go_quote_list
from ...api.resources import lookup
from ...serviceaccount.claims import SERVICE_ACCOUNT_USERNAME_PREFIX
from ...serviceaccount.legacy import LEGACY_ISSUER
from ...storage.interface import Storage
from ...utils.clock import Clock, parse_rfc3339
from .user import (
    ALL_AUTHENTICATED, CREDENTIAL_ID_KEY, NODE_NAME_KEY, NODE_UID_KEY, POD_NAME_KEY, POD_UID_KEY, UserInfo,
)

LEEWAY = 60.0                    # go-jose jwt.DefaultLeeway
CACHE_SIZE = 4096                # tokens whose signature is remembered (the oldest is forgotten first)
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
CRYPTO_FAILURE = "go-jose/go-jose: error in cryptographic primitive"
# Upstream: supportedSigningAlgs (jwt.go)
SUPPORTED_ALGS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"})


class TokenError(Exception):
    """A token this authenticator owns but refuses: a 401, its message a TokenReview's status.error."""


@dataclass(frozen=True, slots=True)
class Ref:
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Verified:
    """What a verified token's signature vouches for; cached per token."""
    audiences: tuple[str, ...]
    expiry: float | None
    not_before: float | None
    issued_at: float | None
    namespace: str
    service_account: Ref
    pod: Ref | None
    secret: Ref | None
    node: Ref | None
    user: UserInfo
    legacy: bool = False         # a Secret's token (legacy.py)


def make_group_names(namespace: str) -> tuple[str, str]:
    """Upstream: serviceaccount.MakeGroupNames"""
    return SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}"


def split_username(username: str) -> tuple[str, str] | None:
    """(namespace, name) of system:serviceaccount:<ns>:<name>, or None. Upstream: SplitUsername"""
    if not username.startswith(SERVICE_ACCOUNT_USERNAME_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_USERNAME_PREFIX):].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


class JWTTokenAuthenticator:
    """Upstream: JWTTokenAuthenticator with the bound-token validator, and a signature cache."""

    def __init__(self, storage: Storage, clock: Clock, issuers: frozenset[str], api_audiences: tuple[str, ...],
                 public_key: Callable[[], Any]) -> None:
        self.storage = storage
        self.clock = clock
        self.issuers = issuers | {LEGACY_ISSUER}   # upstream: a second authenticator, for legacy tokens
        # labels a legacy token's Secret as used today (legacy.py last_used_writer; None: not tracked)
        self.secrets_writer: Callable[[str, str, str], Any] | None = None
        self.api_audiences = api_audiences          # upstream: implicitAuds
        self.public_key = public_key                # called when the first token is checked
        self.cache: dict[str, Verified] = {}
        self._keys = {plural: ri for plural in ("serviceaccounts", "pods", "secrets", "nodes")
                      if (ri := lookup("", "v1", plural)) is not None}

    async def authenticate_token(self, token: str, audiences: tuple[str, ...] | None = None
                                 ) -> tuple[UserInfo, tuple[str, ...]] | None:
        """(user, audiences) for a valid token; None for a token that is not ours; TokenError
        for one that is ours and invalid. audiences None: the API audiences."""
        v = self.cache.get(token)
        if v is None:
            v = self._verify(token)
            if v is None:
                return None
            if len(self.cache) >= CACHE_SIZE:
                del self.cache[next(iter(self.cache))]
            self.cache[token] = v
        wanted = self.api_audiences if audiences is None else audiences
        token_auds = v.audiences or self.api_audiences
        auds = tuple(a for a in token_auds if a in wanted)
        if not auds and self.api_audiences:
            raise TokenError(f"token audiences {go_quote_list(token_auds)} is invalid for the target audiences "
                             f"{go_quote_list(wanted)}")
        if v.legacy:
            from . import legacy
            await legacy.validate(self, token, v)
        else:
            await self._validate(v)
        return v.user, auds

    # -- once per token -------------------------------------------------------------------

    def _verify(self, token: str) -> Verified | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        payload = _b64json(parts[1])
        if not isinstance(payload, dict):
            return None
        iss = payload.get("iss")
        if not isinstance(iss, str) or iss not in self.issuers:      # hasCorrectIssuer (an unhashable iss too)
            return None
        header = _b64json(parts[0])
        alg = header.get("alg") if isinstance(header, dict) else None
        if not isinstance(alg, str) or alg not in SUPPORTED_ALGS:     # ParseSigned fails
            return None
        try:
            signature = _b64decode(parts[2])
        except ValueError:
            return None
        from ...serviceaccount.jwt import verify_signature
        if not verify_signature(self.public_key(), alg, f"{parts[0]}.{parts[1]}".encode(), signature):
            raise TokenError(CRYPTO_FAILURE)
        if iss == LEGACY_ISSUER:
            from . import legacy
            return legacy.verified(payload)
        return _claims(payload)

    # -- every request --------------------------------------------------------------------

    async def _validate(self, v: Verified) -> None:
        """Upstream: validator.Validate — times, then the ServiceAccount and bound objects."""
        now = self.clock.now()
        if v.not_before is not None and now + LEEWAY < v.not_before:
            raise TokenError("service account token is not valid yet")
        if v.expiry is not None and now - LEEWAY > v.expiry:
            raise TokenError("service account token has expired")
        if v.issued_at is not None and now + LEEWAY < v.issued_at:
            raise TokenError("service account token is issued in the future")
        deleted_before = now - LEEWAY
        ns, sa = v.namespace, v.service_account
        obj = await self._get("serviceaccounts", ns, sa.name)
        if _deleted_before(obj, deleted_before):
            raise TokenError(f"service account {ns}/{sa.name} has been deleted")
        if _uid(obj) != sa.uid:
            raise TokenError(f"service account UID ({_uid(obj)}) does not match claim ({sa.uid})")
        if v.secret is not None:
            obj = await self._get("secrets", ns, v.secret.name)
            if _deleted_before(obj, deleted_before):
                raise TokenError(f"secret {ns}/{v.secret.name} has been deleted")
            if _uid(obj) != v.secret.uid:
                raise TokenError(f"secret UID ({_uid(obj)}) does not match service account secret ref claim "
                                 f"({v.secret.uid})")
        if v.pod is not None:
            obj = await self._get("pods", ns, v.pod.name)
            if _deleted_before(obj, deleted_before):
                raise TokenError(f"pod {ns}/{v.pod.name} has been deleted")
            if _uid(obj) != v.pod.uid:
                raise TokenError(f"pod UID ({_uid(obj)}) does not match service account pod ref claim ({v.pod.uid})")
        elif v.node is not None:         # a node-bound token (a pod-bound one only reports its node)
            obj = await self._get("nodes", "", v.node.name)
            if _deleted_before(obj, deleted_before):
                raise TokenError(f"node {v.node.name} has been deleted")
            if _uid(obj) != v.node.uid:
                raise TokenError(f"node UID ({_uid(obj)}) does not match service account node ref claim "
                                 f"({v.node.uid})")

    async def _get(self, plural: str, ns: str, name: str) -> dict[str, Any]:
        ri = self._keys[plural]
        kv = await self.storage.get(ri.key(ns, name))
        if kv is None:                   # upstream: the lister's NotFound error
            raise TokenError(f'{plural} "{name}" not found')
        return kv.obj


def _uid(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _deleted_before(obj: dict[str, Any], before: float) -> bool:
    ts = (obj.get("metadata") or {}).get("deletionTimestamp")
    if not ts:
        return False
    try:
        return parse_rfc3339(ts) < before
    except ValueError:
        return False


def _b64decode(s: str) -> bytes:
    """base64url without padding (RawURLEncoding); ValueError otherwise."""
    if "=" in s or len(s) % 4 == 1:
        raise ValueError("not base64url")
    try:
        return base64.b64decode(s + "=" * (-len(s) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None


def _b64json(s: str) -> Any:
    try:
        return orjson.loads(_b64decode(s))
    except (ValueError, orjson.JSONDecodeError):
        return None


def _ref(value: Any) -> Ref | None:
    if not isinstance(value, dict):
        return None
    name, uid = value.get("name", ""), value.get("uid", "")
    return Ref(name, uid) if isinstance(name, str) and isinstance(uid, str) else None


def _time(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TokenError("go-jose/go-jose/jwt: expected number for NumericDate")
    return float(value)


def _claims(payload: dict[str, Any]) -> Verified:
    """The verified payload's claims and the user they name. Upstream: privateClaims,
    validator.Validate's ServiceAccountInfo and its UserInfo()."""
    aud = payload.get("aud")
    audiences = (aud,) if isinstance(aud, str) else tuple(a for a in aud if isinstance(a, str)) \
        if isinstance(aud, list) else ()
    k8s = payload.get("kubernetes.io")
    if not isinstance(k8s, dict):
        k8s = {}
    ns = k8s.get("namespace", "")
    ns = ns if isinstance(ns, str) else ""
    sa = _ref(k8s.get("serviceaccount")) or Ref("", "")
    pod, secret, node = _ref(k8s.get("pod")), _ref(k8s.get("secret")), _ref(k8s.get("node"))
    jti = payload.get("jti")
    extra: dict[str, tuple[str, ...]] = {}
    if pod is not None and pod.name and pod.uid:
        extra[POD_NAME_KEY], extra[POD_UID_KEY] = (pod.name,), (pod.uid,)
    if isinstance(jti, str) and jti:
        extra[CREDENTIAL_ID_KEY] = (f"JTI={jti}",)
    if node is not None and node.name:
        extra[NODE_NAME_KEY] = (node.name,)
        if node.uid:
            extra[NODE_UID_KEY] = (node.uid,)
    user = UserInfo(f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{ns}:{sa.name}", sa.uid,
                    (*make_group_names(ns), ALL_AUTHENTICATED), tuple(sorted(extra.items())))
    return Verified(audiences, _time(payload.get("exp")), _time(payload.get("nbf")), _time(payload.get("iat")),
                    ns, sa, pod, secret, node, user)
