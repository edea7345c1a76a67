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
        secret = kv.obj
        data = secret.get("data") if isinstance(secret.get("data"), dict) else None
        if (secret.get("metadata") or {}).get("deletionTimestamp"):
            return _refused(secret, "is deleted and awaiting removal")
        if secret.get("type") != bt.SECRET_TYPE or data is None:
            return _refused(secret, f"has invalid type, expected {bt.SECRET_TYPE}.")
        if not hmac.compare_digest(bt.get_data(data, bt.TOKEN_SECRET_KEY).encode(), token_secret.encode()):
            return _refused(secret, f"has invalid value for key {bt.TOKEN_SECRET_KEY}.")
        if bt.get_data(data, bt.TOKEN_ID_KEY) != token_id:
            return _refused(secret, f"has invalid value for key {bt.TOKEN_ID_KEY}.")
        if bt.expiration(data, self.clock.now())[1]:
            return _refused(secret, "has expired.")
        if bt.get_data(data, bt.USAGE_AUTHENTICATION_KEY) != "true":
            return _refused(secret, f"not marked {bt.USAGE_AUTHENTICATION_KEY}=true.")
        try:
            groups = bt.groups(data)
        except ValueError as err:
            return _refused(secret, f"has invalid value for key {bt.EXTRA_GROUPS_KEY}: {err}.")
        return authenticated(bt.USER_PREFIX + token_id, *groups)


def _refused(secret: dict[str, Any], why: str) -> None:
    """Upstream: tokenErrorf — logged, and the token is not this authenticator's."""
    meta = secret.get("metadata") or {}
    log.debug("Bootstrap secret %s/%s matching bearer token %s", meta.get("namespace"), meta.get("name"), why)
