"""Service account issuer discovery: the OpenID Connect documents a token's verifier reads.

    GET /.well-known/openid-configuration   {"issuer", "jwks_uri", "response_types_supported",
                                             "subject_types_supported", "id_token_signing_alg_values_supported"}
    GET /openid/v1/jwks                     the public signing key as a JWK Set

jwks_uri is https://<the API server's address>/openid/v1/jwks (upstream: --service-account-jwks-uri,
else the external address). Cache-Control lets clients keep them an hour, as upstream's
handlers say.

Upstream: pkg/serviceaccount/openidmetadata.go (NewOpenIDMetadataProvider, openIDMetadata),
pkg/routes/openidmetadata.go.
"""
from __future__ import annotations

import orjson

from .jwt import TokenGenerator

OPENID_CONFIG_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
CACHE_CONTROL = "public, max-age=3600"
JWKS_CONTENT_TYPE = "application/jwk-set+json"


def openid_configuration(generator: TokenGenerator, server_address: str) -> bytes:
    """Upstream: openIDMetadata (field order as its struct)."""
    return orjson.dumps({"issuer": generator.issuer, "jwks_uri": f"https://{server_address}{JWKS_PATH}",
                         "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                         "id_token_signing_alg_values_supported": [generator.alg]})


def jwks(generator: TokenGenerator) -> bytes:
    return orjson.dumps(generator.jwks())
