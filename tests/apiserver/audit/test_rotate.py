"""The audit log's rotation, as lumberjack's: backups named <name>-<timestamp>.<ext>, kept by
count and age, compressed on request."""
from __future__ import annotations

import gzip
import os
import pathlib

import pytest

from kubeplane.apiserver.audit.rotate import RotatingFile

T0 = 1_764_183_845.123        # 2025-11-26T19:04:05.123Z


class Now:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def rotating(tmp_path: pathlib.Path, max_bytes: int = 100, **kw: int) -> tuple[RotatingFile, Now]:
    now = Now()
    f = RotatingFile(str(tmp_path / "audit.log"), 1, now=now, **kw)    # type: ignore[arg-type]
    f.max_size = max_bytes           # bytes rather than megabytes, for the test
    return f, now


def names(tmp_path: pathlib.Path) -> list[str]:
    return sorted(os.listdir(tmp_path))


def test_a_write_past_the_size_rotates_first(tmp_path: pathlib.Path) -> None:
    f, now = rotating(tmp_path)
    f.write(b"a" * 60 + b"\n")
    f.write(b"b" * 30 + b"\n")       # 92 bytes: fits
    f.write(b"c" * 20 + b"\n")       # 113 > 100: rotate, then write
    f.flush()
    assert names(tmp_path) == ["audit-2025-11-26T19-04-05.123.log", "audit.log"]
    assert (tmp_path / "audit-2025-11-26T19-04-05.123.log").read_bytes() == b"a" * 60 + b"\n" + b"b" * 30 + b"\n"
    assert (tmp_path / "audit.log").read_bytes() == b"c" * 20 + b"\n"
    f.close()


def test_a_write_larger_than_the_limit_is_refused(tmp_path: pathlib.Path) -> None:
    f, _ = rotating(tmp_path)
    with pytest.raises(OSError, match="write length 101 exceeds maximum file size 100"):
        f.write(b"x" * 101)
    f.close()


def test_an_existing_file_counts(tmp_path: pathlib.Path) -> None:
    (tmp_path / "audit.log").write_bytes(b"x" * 90)
    f, _ = rotating(tmp_path)
    f.write(b"y" * 20)
    f.close()
    assert len(names(tmp_path)) == 2 and (tmp_path / "audit.log").read_bytes() == b"y" * 20


def test_max_backups_keeps_the_newest(tmp_path: pathlib.Path) -> None:
    f, now = rotating(tmp_path, max_backups=2)
    for i in range(4):
        f.write(b"%d" % i * 80)
        now.t += 1
    f.close()
    assert names(tmp_path) == ["audit-2025-11-26T19-04-07.123.log", "audit-2025-11-26T19-04-08.123.log", "audit.log"]
    assert (tmp_path / "audit-2025-11-26T19-04-08.123.log").read_bytes() == b"2" * 80


def test_max_age_removes_old_backups(tmp_path: pathlib.Path) -> None:
    f, now = rotating(tmp_path, max_age_days=1)
    f.write(b"a" * 80)
    f.write(b"b" * 80)               # backup at T0
    now.t += 2 * 86400
    f.write(b"c" * 80)               # backup at T0 + 2 days; the first is now too old
    f.close()
    assert names(tmp_path) == ["audit-2025-11-28T19-04-05.123.log", "audit.log"]


def test_compress(tmp_path: pathlib.Path) -> None:
    f, _ = rotating(tmp_path, compress=True)
    f.write(b"a" * 80)
    f.write(b"b" * 80)
    f.close()
    assert names(tmp_path) == ["audit-2025-11-26T19-04-05.123.log.gz", "audit.log"]
    assert gzip.decompress((tmp_path / "audit-2025-11-26T19-04-05.123.log.gz").read_bytes()) == b"a" * 80


def test_other_files_are_left_alone(tmp_path: pathlib.Path) -> None:
    (tmp_path / "audit-notatime.log").write_bytes(b"keep")
    (tmp_path / "other.log").write_bytes(b"keep")
    f, now = rotating(tmp_path, max_backups=1)
    for _ in range(3):
        f.write(b"z" * 80)
        now.t += 1
    f.close()
    assert names(tmp_path) == ["audit-2025-11-26T19-04-07.123.log", "audit-notatime.log", "audit.log", "other.log"]


def test_the_new_file_is_private(tmp_path: pathlib.Path) -> None:
    f, _ = rotating(tmp_path)
    f.write(b"a" * 80)
    f.write(b"b" * 80)
    f.close()
    assert (tmp_path / "audit.log").stat().st_mode & 0o777 == 0o600
