"""Service account tokens: JWTs signed with the API server's service account key.

The key is `<data dir>/pki/sa.key` (an RSA 2048 key, kubeadm's `sa.key`, made on first start:
~15 ms), or any PEM RSA / EC private key given with --service-account-signing-key-file.
RSA signs RS256, EC P-256/384/521 ES256/384/512, as upstream's JWTTokenGenerator picks by key.
The header is `{"alg":...,"kid":...}` with upstream's key ID (base64url SHA-256 of the public
key's PKIX DER), the payload the public and private claims merged in one object with sorted
keys (go-jose marshals a map), so a token here has the bytes upstream's would have.

Why hand-rolled over PyJWT or joserfc: a compact JWS is three base64url parts and one
signature call, and `cryptography` (already a dependency) signs either way. Both libraries
add a dependency for those ~20 lines, and both put `"typ":"JWT"` in the header, which
upstream's tokens (go-jose) do not carry: the bytes would differ from upstream's. Correctness:
PyJWT and joserfc both verify our tokens (audience, issuer, expiry). Speed, per token, with
`.venv/bin/python benchmarks/jwt_bench.py` (2 shared cores): RS256 hand-rolled 0.215 ms,
PyJWT 2.15.1 0.221 ms, joserfc 1.8.0 0.226 ms (the RSA operation is nearly all of it); ES256
0.025 / 0.036 / 0.051 ms. Verification (issue 12) is the same size of code.

Upstream: pkg/serviceaccount/jwt.go (JWTTokenGenerator, signerFromRSAPrivateKey,
signerFromECDSAPrivateKey, keyIDFromPublicKey), pkg/serviceaccount/openidmetadata.go (the JWKS).
"""
from __future__ import annotations

import base64
import hashlib
import pathlib
from dataclasses import dataclass
from typing import Any

import orjson
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from ..utils.files import write_atomic

Obj = dict[str, Any]
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

# ES* by curve: (alg, hash, byte length of r and s). Upstream: signerFromECDSAPrivateKey
_EC_ALGS = {"secp256r1": ("ES256", hashes.SHA256, 32), "secp384r1": ("ES384", hashes.SHA384, 48),
            "secp521r1": ("ES512", hashes.SHA512, 66)}
_JWK_CURVES = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def key_id(public_key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey) -> str:
    """Upstream: keyIDFromPublicKey — base64url (no padding) of SHA-256 of the PKIX DER."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return b64url(hashlib.sha256(der).digest())


@dataclass(frozen=True)
class TokenGenerator:
    """Signs claims with one private key. Upstream: JWTTokenGenerator(iss, signer)."""

    issuer: str
    key: PrivateKey

    @property
    def alg(self) -> str:
        if isinstance(self.key, rsa.RSAPrivateKey):
            return "RS256"
        return _EC_ALGS[self.key.curve.name][0]

    @property
    def kid(self) -> str:
        return key_id(self.key.public_key())

    def generate_token(self, claims: Obj) -> str:
        """The compact JWS of claims with iss set. Upstream: GenerateToken"""
        header = orjson.dumps({"alg": self.alg, "kid": self.kid})
        payload = orjson.dumps({**claims, "iss": self.issuer}, option=orjson.OPT_SORT_KEYS)
        signing_input = f"{b64url(header)}.{b64url(payload)}".encode()
        return f"{signing_input.decode()}.{b64url(self._sign(signing_input))}"

    def _sign(self, data: bytes) -> bytes:
        if isinstance(self.key, rsa.RSAPrivateKey):
            return self.key.sign(data, padding.PKCS1v15(), hashes.SHA256())
        _, hash_, size = _EC_ALGS[self.key.curve.name]
        r, s = decode_dss_signature(self.key.sign(data, ec.ECDSA(hash_())))
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")      # JWS wants r||s, not DER

    def jwks(self) -> Obj:
        """The public key as a JSON Web Key Set. Upstream: publicJWKSFromKeys (openidmetadata.go)"""
        pub = self.key.public_key()
        # go-jose's field order: use, kty, kid, crv, alg, then the key's numbers.
        jwk: Obj = {"use": "sig", "kty": "RSA" if isinstance(pub, rsa.RSAPublicKey) else "EC", "kid": self.kid}
        if isinstance(pub, ec.EllipticCurvePublicKey):
            jwk["crv"] = _JWK_CURVES[pub.curve.name]
        jwk["alg"] = self.alg
        if isinstance(pub, rsa.RSAPublicKey):
            nums = pub.public_numbers()
            jwk["n"] = b64url(nums.n.to_bytes((nums.n.bit_length() + 7) // 8, "big"))
            jwk["e"] = b64url(nums.e.to_bytes((nums.e.bit_length() + 7) // 8, "big"))
        else:
            ecn = pub.public_numbers()
            size = _EC_ALGS[pub.curve.name][2]
            jwk.update(x=b64url(ecn.x.to_bytes(size, "big")), y=b64url(ecn.y.to_bytes(size, "big")))
        return {"keys": [jwk]}


_RSA_HASHES: dict[str, type[hashes.SHA256 | hashes.SHA384 | hashes.SHA512]] = {
    "256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}


def verify_signature(public_key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey, alg: str, data: bytes,
                     signature: bytes) -> bool:
    """Whether signature is alg's signature of data by public_key: RS*/PS* with an RSA key,
    the ES* of the curve with an EC key (r||s). Upstream: go-jose's verifiers, as
    JWTTokenAuthenticator uses them (apiserver/authentication/serviceaccount.py)."""
    try:
        if isinstance(public_key, rsa.RSAPublicKey):
            hash_ = _RSA_HASHES.get(alg[2:])
            if hash_ is None or alg[:2] not in ("RS", "PS"):
                return False
            pad = (padding.PKCS1v15() if alg[:2] == "RS"
                   else padding.PSS(mgf=padding.MGF1(hash_()), salt_length=padding.PSS.AUTO))
            public_key.verify(signature, data, pad, hash_())
            return True
        want, ec_hash, size = _EC_ALGS[public_key.curve.name]
        if alg != want or len(signature) != 2 * size:
            return False
        der = encode_dss_signature(int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big"))
        public_key.verify(der, data, ec.ECDSA(ec_hash()))
        return True
    except (InvalidSignature, ValueError):
        return False


def load_private_key(pem: bytes) -> PrivateKey:
    """An RSA or EC private key from PEM; ValueError for anything else."""
    key = serialization.load_pem_private_key(pem, password=None)
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name not in _EC_ALGS:
        raise ValueError(f"unsupported elliptic curve {key.curve.name}")
    if not isinstance(key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey)):
        raise ValueError("the service account signing key must be an RSA or ECDSA private key")
    return key


def generate_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def ensure_signing_key(pki: pathlib.Path) -> PrivateKey:
    """Load pki/sa.key, making it (and pki/sa.pub, for verifiers) on first use; 0600 both."""
    path = pki / "sa.key"
    if path.exists():
        return load_private_key(path.read_bytes())
    key = generate_key()
    write_atomic(path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()))
    write_atomic(pki / "sa.pub", key.public_key().public_bytes(serialization.Encoding.PEM,
                                                               serialization.PublicFormat.SubjectPublicKeyInfo))
    return key
