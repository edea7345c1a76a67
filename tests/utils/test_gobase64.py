"""utils.gobase64 against the tables of Go's encoding/base64 tests (base64_test.go)."""
from __future__ import annotations

import pytest

from kubeplane.utils import gobase64

# Upstream: TestDecodeCorrupt (encoding/base64/base64_test.go); -1: no corruption.
DECODE_CORRUPT = [
    ("", -1), ("\n", -1), ("AAA=\n", -1), ("AAAA\n", -1), ("!!!!", 0), ("====", 0), ("x===", 1),
    ("=AAA", 0), ("A=AA", 1), ("AA=A", 2), ("AA==A", 4), ("AAA=AAAA", 4), ("AAAAA", 4), ("AAAAAA", 4),
    ("A=", 1), ("A==", 1), ("AA=", 3), ("AA==", -1), ("AAA=", -1), ("AAAA", -1), ("AAAAAA=", 7),
    ("YWJjZA=====", 8), ("A!\n", 1), ("A=\n", 1),
]


@pytest.mark.parametrize("text,offset", DECODE_CORRUPT)
def test_decode_corrupt(text: str, offset: int) -> None:
    if offset == -1:
        gobase64.decode_string(text)
        return
    with pytest.raises(gobase64.CorruptInputError) as e:
        gobase64.decode_string(text)
    assert e.value.offset == offset
    assert str(e.value) == f"illegal base64 data at input byte {offset}"


# Upstream: TestNewLineCharacters: each decodes to "sure".
@pytest.mark.parametrize("text", ["c3VyZQ==", "c3VyZQ==\r", "c3VyZQ==\n", "c3VyZQ==\r\n", "c3VyZ\r\nQ==",
                                  "c3V\ryZ\nQ==", "c3V\nyZ\rQ==", "c3VyZ\nQ==", "c3VyZQ\n==", "c3VyZQ=\n=",
                                  "c3VyZQ=\r\n\r\n="])
def test_line_breaks_are_skipped(text: str) -> None:
    assert gobase64.decode_string(text) == b"sure"
    assert gobase64.canonical(text) == "c3VyZQ=="


def test_canonical_zeroes_unused_bits_and_keeps_canonical_input() -> None:
    assert gobase64.decode_string("YR==") == b"a"          # StdEncoding is not Strict()
    assert gobase64.canonical("YR==") == "YQ=="
    s = "aGVsbG8="
    assert gobase64.canonical(s) is s


@pytest.mark.parametrize("text,offset", [
    ("not base64!", 3), ("aGVs bG8=", 4), ("aGVsbG8", 4), ("aGVsbG8=\n\nx", 10), ("é", 0), ("aé", 1),
    ("aGVs\tbG8=", 4),
])
def test_foreign_bytes(text: str, offset: int) -> None:
    with pytest.raises(gobase64.CorruptInputError) as e:
        gobase64.decode_string(text)
    assert e.value.offset == offset
