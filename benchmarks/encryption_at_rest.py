"""Encryption at rest: what the store's transformer costs per value.

    .venv/bin/python benchmarks/encryption_at_rest.py

1. Pass-through: the default configuration (secrets: secretbox, identity) on a key no rule
   lists (/registry/pods/...), which is nearly every write; against no transformer at all, and
   against two other ways to find the resource (slice + dict lookup; a Python loop).
2. Every key encrypted ("*.*": secretbox): the cost on a pod-sized value.
3. One seal and one open per provider and library, on 1 KiB and 16 KiB values (upstream's
   secretbox benchmark sizes), including pysodium when it is installed (the library compared
   with PyNaCl; not a dependency).

Figures are the best of 5 repeats (the machine is shared), in nanoseconds or microseconds.
"""
from __future__ import annotations

import os
import pathlib
import sys
import tempfile
import timeit
from collections.abc import Callable
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from kubeplane.api.resources import RESOURCES
from kubeplane.storage.value import ensure_default_config, new_storage_transformer
from kubeplane.storage.value.encrypt.aes import CBCTransformer, GCMTransformer
from kubeplane.storage.value.encrypt.identity import IDENTITY
from kubeplane.storage.value.encrypt.secretbox import SecretboxTransformer

POD_KEY = "/registry/pods/ns-07/web-7d4b9c8f6-000042"
POD = b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"}}' + b" " * 1430   # ~1.5 KB


def best(fn: Callable[[], Any], number: int) -> float:
    """Seconds per call, best of 5."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def pass_through(tmp: pathlib.Path) -> None:
    t = new_storage_transformer(ensure_default_config(tmp / "default"), RESOURCES)
    by_prefix = {r.prefix: IDENTITY for r in RESOURCES}
    by_prefix["/registry/secrets/"] = t.transformer_for_key("/registry/secrets/a/b")

    def dict_lookup(key: str, data: bytes) -> bytes:
        return by_prefix.get(key[:key.find("/", 10) + 1], IDENTITY).transform_to_storage(key, data)

    def loop(key: str, data: bytes) -> bytes:
        for prefix, tr in by_prefix.items():
            if key.startswith(prefix):
                return tr.transform_to_storage(key, data)
        return data

    def nothing(key: str, data: bytes) -> bytes:
        return data

    n = 1_000_000
    print("1. pass-through, default config, key /registry/pods/... (ns per value)")
    for name, fn in [("no transformer (a function returning data)", nothing),
                     ("StorageKeyTransformer.transform_to_storage", t.transform_to_storage),
                     ("  alternative: slice + dict lookup + identity", dict_lookup),
                     ("  alternative: loop over prefixes", loop)]:
        print(f"   {name:48s} {best(lambda fn=fn: fn(POD_KEY, POD), n) * 1e9:7.0f}")
    print(f"   {'StorageKeyTransformer.transform_from_storage':48s} "
          f"{best(lambda: t.transform_from_storage(POD_KEY, POD), n) * 1e9:7.0f}")


def everything_encrypted(tmp: pathlib.Path) -> None:
    path = tmp / "all.yaml"
    path.write_text(ensure_default_config(tmp / "all").read_text().replace("- secrets", "- '*.*'"))
    t = new_storage_transformer(path, RESOURCES)
    sealed = t.transform_to_storage(POD_KEY, POD)
    n = 100_000
    print(f"2. '*.*': secretbox on every value, {len(POD)}-byte pod (us per value)")
    print(f"   write {best(lambda: t.transform_to_storage(POD_KEY, POD), n) * 1e6:6.2f}"
          f"   read {best(lambda: t.transform_from_storage(POD_KEY, sealed), n) * 1e6:6.2f}")


def providers() -> None:
    key32 = os.urandom(32)
    rows: list[tuple[str, Callable[[bytes], bytes], Callable[[bytes], Any]]] = []
    for name, tr in [("secretbox (PyNaCl bindings)", SecretboxTransformer(key32)),
                     ("aesgcm (cryptography)", GCMTransformer(key32)),
                     ("aescbc (cryptography)", CBCTransformer(key32))]:
        rows.append((name, lambda v, tr=tr: tr.transform_to_storage("/k", v),
                     lambda c, tr=tr: tr.transform_from_storage("/k", c)))
    import nacl.secret
    box = nacl.secret.SecretBox(key32)
    rows.append(("secretbox (PyNaCl SecretBox class)", lambda v: bytes(box.encrypt(v)), box.decrypt))
    try:
        import pysodium
    except (ImportError, OSError, ValueError):
        print("   (pysodium not installed: `pip install pysodium` to compare it)")
    else:
        def ps_seal(v: bytes) -> bytes:
            nonce = os.urandom(24)
            return nonce + pysodium.crypto_secretbox(v, nonce, key32)
        rows.append(("secretbox (pysodium, ctypes)", ps_seal,
                     lambda c: pysodium.crypto_secretbox_open(c[24:], c[:24], key32)))
    print("3. one seal / one open (us)          1 KiB           16 KiB")
    for name, seal, open_ in rows:
        cells = []
        for size in (1024, 16384):
            v = b"0123456789abcdef" * (size // 16)
            c = seal(v)
            t_seal = best(lambda seal=seal, v=v: seal(v), 20_000)
            t_open = best(lambda open_=open_, c=c: open_(c), 20_000)
            cells.append(f"{t_seal * 1e6:5.2f} / {t_open * 1e6:5.2f}")
        print(f"   {name:34s} {cells[0]:>15s}  {cells[1]:>15s}")


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        pass_through(pathlib.Path(d))
        everything_encrypted(pathlib.Path(d))
    providers()


if __name__ == "__main__":
    main()
