"""What the API server mints service account tokens with: its signer and its flags.

    --service-account-issuer            the tokens' iss (default https://kubernetes.default.svc.cluster.local,
                                        kubeadm's; upstream has no default and requires the flag)
    --api-audiences                     a TokenRequest's default audiences (default: the issuer)
    --service-account-max-token-expiration   longest validity a TokenRequest gets (default 0: no limit)
    --service-account-extend-token-expiration  pod-bound 3607 s tokens for the API server's
                                        audiences are valid for a year (default true)

Upstream: ServiceAccountAuthenticationOptions (pkg/kubeapiserver/options/authentication.go), the
TokenREST fields built from them (pkg/registry/core/rest/storage_core.go).
"""
from __future__ import annotations

from dataclasses import dataclass

from .claims import EXPIRATION_EXTENSION_SECONDS
from .jwt import PrivateKey, TokenGenerator, generate_key

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True)
class ServiceAccountTokens:
    generator: TokenGenerator
    audiences: tuple[str, ...]
    max_expiration_seconds: int = 0
    extend_expiration: bool = True
    max_extended_expiration_seconds: int = EXPIRATION_EXTENSION_SECONDS

    @classmethod
    def new(cls, key: PrivateKey | None = None, *, issuer: str = DEFAULT_ISSUER,
            audiences: tuple[str, ...] = (), max_expiration_seconds: int = 0,
            extend_expiration: bool = True) -> ServiceAccountTokens:
        """key None: a fresh key held in memory (in-process test servers, which have no data dir)."""
        return cls(TokenGenerator(issuer, key if key is not None else generate_key()), audiences or (issuer,),
                   max_expiration_seconds, extend_expiration)
