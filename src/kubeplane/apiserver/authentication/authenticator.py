"""The request authenticator: upstream's union, in upstream's order.

1. x509: the connection's verified client certificate (x509.py), if it names a user;
2. a bearer token (`Authorization: Bearer <token>`), tried against the token file
   (--token-auth-file, tokenfile.py), then the service account tokens (serviceaccount.py),
   then bootstrap tokens (--enable-bootstrap-token-auth, bootstrap.py);
   a token none of them accepts is a 401 (upstream: "invalid bearer token"), never anonymous;
3. anonymous (--anonymous-auth, default true): system:anonymous in system:unauthenticated;
   with it off, a request without credentials is a 401.
Every user but the anonymous one carries system:authenticated (the authenticators build their
users with it: upstream's AuthenticatedGroupAdder). `Authorization: Bearer` with nothing after
it is no token (anonymous), as upstream's bearertoken authenticator.

TokenReview uses the token half (`authenticate_token`) with the review's audiences; its
status.error is upstream's: "invalid bearer token" for a token nobody knows, "[invalid bearer
token, <reason>]" for a service account token refused (kube-apiserver's request union
aggregates the reason with its other bearer-token authenticator's default error, as it logs
them, e.g. issue kubernetes/kubernetes#135450).

Upstream: pkg/kubeapiserver/authenticator/config.go (New: x509, then the token union behind
bearertoken, then union.NewFailOnError with anonymous), k8s.io/apiserver
pkg/authentication/request/{union,bearertoken,anonymous}, token/union, and
WrapAudienceAgnosticToken (authenticator/audagnostic.go) for the token file.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...api import errors
from .bootstrap import BootstrapTokenAuthenticator
from .serviceaccount import JWTTokenAuthenticator, TokenError
from .tokenfile import TokenFile
from .user import ANONYMOUS, UserInfo

if TYPE_CHECKING:
    from ...utils.clock import Clock
    from ..request import Request

INVALID_TOKEN = "invalid bearer token"


@dataclass(slots=True)
class TokenResponse:
    """Upstream: authenticator.Response for a token — the user, and the audiences it is good for."""
    user: UserInfo | None
    audiences: tuple[str, ...] = ()
    error: str = ""


class Authenticator:
    def __init__(self, clock: Clock, api_audiences: tuple[str, ...], *, token_file: TokenFile | None = None,
                 service_accounts: JWTTokenAuthenticator | None = None,
                 bootstrap: BootstrapTokenAuthenticator | None = None, anonymous: bool = True) -> None:
        self.clock = clock
        self.api_audiences = api_audiences
        self.token_file = token_file or TokenFile({})
        self.service_accounts = service_accounts
        self.bootstrap = bootstrap
        self.anonymous = anonymous

    async def authenticate(self, req: Request) -> UserInfo:
        """The request's user; 401 for credentials that do not authenticate. Upstream: the union"""
        x509 = req.x509
        if x509 is not None:
            if x509.error or self.clock.now() > x509.not_after:
                raise errors.Unauthorized()
            if x509.user is not None:
                return x509.user
        token = bearer_token(req.headers.get("authorization"))
        if token is not None:
            user = self.token_file.tokens.get(token)
            if user is not None:
                return user
            resp = await self.authenticate_token(token)
            if resp.user is None:
                raise errors.Unauthorized()
            return resp.user
        if self.anonymous:
            return ANONYMOUS
        raise errors.Unauthorized()

    def authenticate_now(self, req: Request) -> UserInfo | None:
        """authenticate()'s user when no look-up is needed: a valid client certificate's, or a
        token file token's; None for anything else (then authenticate() decides, its 401s
        included). Exact: "Bearer <token>" with no space in the token and none trailing is
        the token bearer_token() finds."""
        x509 = req.x509
        if x509 is not None:
            if x509.error or self.clock.now() > x509.not_after:
                return None
            if x509.user is not None:
                return x509.user
        header = req.headers.get("authorization")
        if header is not None and header[:7] == "Bearer ":
            token = header[7:]
            if token and " " not in token and not token[-1].isspace():
                return self.token_file.tokens.get(token)
        return None

    async def authenticate_token(self, token: str, audiences: tuple[str, ...] | None = None) -> TokenResponse:
        """The token union: the token file, then service account tokens, then bootstrap
        tokens. audiences None: the API audiences (a request's); a TokenReview passes its own."""
        wanted = self.api_audiences if audiences is None else audiences
        user = self.token_file.tokens.get(token)
        if user is not None and (resp := self._audience_agnostic(user, wanted)) is not None:
            return resp
        if self.service_accounts is not None:
            try:
                found = await self.service_accounts.authenticate_token(token, audiences)
            except TokenError as e:
                # Upstream's request union aggregates this with the other bearer-token
                # authenticator's default error (as kube-apiserver logs and TokenReview shows it).
                return TokenResponse(None, error=f"[{INVALID_TOKEN}, {e}]")
            if found is not None:
                return TokenResponse(*found)
        if self.bootstrap is not None and (user := await self.bootstrap.authenticate_token(token)) is not None \
                and (resp := self._audience_agnostic(user, wanted)) is not None:
            return resp
        return TokenResponse(None, error=INVALID_TOKEN)

    def _audience_agnostic(self, user: UserInfo, wanted: tuple[str, ...]) -> TokenResponse | None:
        """A user of a token that names no audience (token file, bootstrap tokens): good for
        the API audiences that were asked for. Upstream: WrapAudienceAgnosticToken"""
        auds = tuple(a for a in self.api_audiences if a in wanted)
        return TokenResponse(user, auds) if auds or not self.api_audiences else None


def bearer_token(header: str | None) -> str | None:
    """The token of an Authorization header, or None (no header, another scheme, an empty
    token). Upstream: bearertoken.Authenticator.AuthenticateRequest"""
    if not header:
        return None
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]
