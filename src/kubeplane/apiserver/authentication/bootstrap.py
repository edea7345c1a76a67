"""Bootstrap token authentication (--enable-bootstrap-token-auth): a bearer token
`<id>.<secret>` whose Secret kube-system/bootstrap-token-<id> holds the same halves, has not
expired, is not being deleted and allows `usage-bootstrap-authentication` is the user
system:bootstrap:<id> in system:bootstrappers and its `auth-extra-groups` (with
system:authenticated, as every authenticated user). Every other case is "not mine": the union
answers "invalid bearer token", and why is only logged (at debug, upstream's V(3)).

The Secret is read from storage on every request, so deleting it revokes the token at once;
tokens of this form are only used by joining nodes, rarely. The secret half is compared in
constant time.

Upstream: plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go (TokenAuthenticator),
k8s.io/cluster-bootstrap (api/bootstraptoken.py here).
"""
from __future__ import annotations

import hmac
import logging
from typing import Any

from ...api import bootstraptoken as bt
from ...api.resources import lookup
from ...storage.interface import Storage
from ...utils.clock import Clock
from .user import UserInfo, authenticated

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"


class BootstrapTokenAuthenticator:
    def __init__(self, storage: Storage, clock: Clock) -> None:
        self.storage = storage
        self.clock = clock
        secrets = lookup("", "v1", "secrets")
        assert secrets is not None
        self._secrets = secrets

    async def authenticate_token(self, token: str) -> UserInfo | None:
        """The token's user, or None. Upstream: TokenAuthenticator.AuthenticateToken"""
        parsed = bt.parse_token(token)
        if parsed is None:                   # not of the bootstrap form: someone else's
            return None
        token_id, token_secret = parsed
        name = bt.SECRET_PREFIX + token_id
        kv = await self.storage.get(self._secrets.key(NAMESPACE, name))
        if kv is None:
            log.debug("No secret of name %s to match bootstrap bearer token", name)
            return None
        why, user = _check(kv.obj, token_id, token_secret, self.clock.now())
        if why:                              # upstream: tokenErrorf, logged at V(3)
            meta = kv.obj.get("metadata") or {}
            log.debug("Bootstrap secret %s/%s matching bearer token %s", meta.get("namespace"), meta.get("name"), why)
        return user


def _check(secret: dict[str, Any], token_id: str, token_secret: str, now: float) -> tuple[str, UserInfo | None]:
    """(why the Secret refuses the token, or ""; the token's user). Upstream: the checks of
    TokenAuthenticator.AuthenticateToken, in its order."""
    data = secret.get("data") if isinstance(secret.get("data"), dict) else None
    if (secret.get("metadata") or {}).get("deletionTimestamp"):
        return "is deleted and awaiting removal", None
    if secret.get("type") != bt.SECRET_TYPE or data is None:
        return f"has invalid type, expected {bt.SECRET_TYPE}.", None
    if not hmac.compare_digest(bt.get_data(data, bt.TOKEN_SECRET_KEY).encode(), token_secret.encode()):
        return f"has invalid value for key {bt.TOKEN_SECRET_KEY}.", None
    if bt.get_data(data, bt.TOKEN_ID_KEY) != token_id:
        return f"has invalid value for key {bt.TOKEN_ID_KEY}.", None
    if bt.expiration(data, now)[1]:
        return "has expired.", None
    if bt.get_data(data, bt.USAGE_AUTHENTICATION_KEY) != "true":
        return f"not marked {bt.USAGE_AUTHENTICATION_KEY}=true.", None
    try:
        groups = bt.groups(data)
    except ValueError as err:
        return f"has invalid value for key {bt.EXTRA_GROUPS_KEY}: {err}.", None
    return "", authenticated(bt.USER_PREFIX + token_id, *groups)
