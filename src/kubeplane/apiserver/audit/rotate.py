"""A log file that rotates itself by size, as upstream's audit log does (lumberjack).

When a write would take the file past max_size bytes, the file is renamed to a backup named
<name>-<timestamp>.<ext> (UTC, "2006-01-02T15-04-05.000": audit.log becomes
audit-2026-11-26T19-04-05.123.log) and a new file is started; then backups beyond max_backups
(the newest kept) or older than max_age days (by the time in their name) are removed, and with
compress the rest are gzipped (audit-….log.gz). 0 means no limit for max_backups and max_age.
A single write larger than max_size is refused, as lumberjack does.

Called from the audit log's writer thread only (never from the event loop).
Upstream: gopkg.in/natefinch/lumberjack.v2 Logger (lumberjack.go).
"""
from __future__ import annotations

import datetime as dt
import gzip
import os
import shutil
import time
from typing import Callable

BACKUP_TIME_FORMAT = "%Y-%m-%dT%H-%M-%S"
MEGABYTE = 1024 * 1024


class RotatingFile:
    """Upstream: lumberjack.Logger (LocalTime false: backup times in UTC)."""

    def __init__(self, path: str, max_size_mb: int, max_age_days: int = 0, max_backups: int = 0,
                 compress: bool = False, now: Callable[[], float] = time.time) -> None:
        self.path = path
        self.max_size = max_size_mb * MEGABYTE
        self.max_age = max_age_days
        self.max_backups = max_backups
        self.compress = compress
        self.now = now
        self.dir, base = os.path.split(os.path.abspath(path))
        stem, self.ext = os.path.splitext(base)
        self.prefix = stem + "-"
        self.file = open(path, "ab")     # kept open; closed by close()
        self.size = self.file.tell()

    def write(self, data: bytes) -> None:
        if self.max_size and len(data) > self.max_size:
            raise OSError(f"write length {len(data)} exceeds maximum file size {self.max_size}")
        if self.max_size and self.size + len(data) > self.max_size:
            self.rotate()
        self.file.write(data)
        self.size += len(data)

    def flush(self) -> None:
        self.file.flush()

    def rotate(self) -> None:
        """Upstream: Logger.rotate (openNew + mill)."""
        self.file.close()       # flushes what was written
        os.rename(self.path, self.backup_name(self.now()))
        fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_APPEND | os.O_TRUNC, 0o600)
        self.file = os.fdopen(fd, "ab")
        self.size = 0
        self.mill()

    def backup_name(self, t: float) -> str:
        """Upstream: backupName."""
        when = dt.datetime.fromtimestamp(t, dt.timezone.utc)
        stamp = when.strftime(BACKUP_TIME_FORMAT) + f".{when.microsecond // 1000:03d}"
        return os.path.join(self.dir, f"{self.prefix}{stamp}{self.ext}")

    def backups(self) -> list[tuple[float, str]]:
        """(time in the name, file name) of every backup, newest first. Upstream: oldLogFiles"""
        out = []
        for name in os.listdir(self.dir):
            for suffix in (self.ext, self.ext + ".gz"):
                if name.startswith(self.prefix) and name.endswith(suffix) and (t := self._time(name, suffix)) is not None:
                    out.append((t, name))
                    break
        out.sort(reverse=True)
        return out

    def _time(self, name: str, suffix: str) -> float | None:
        stamp = name[len(self.prefix):len(name) - len(suffix)]
        try:
            when = dt.datetime.strptime(stamp, BACKUP_TIME_FORMAT + ".%f")
        except ValueError:
            return None
        return when.replace(tzinfo=dt.timezone.utc).timestamp()

    def mill(self) -> None:
        """Remove what max_backups and max_age no longer keep, compress the rest.
        Upstream: millRunOnce"""
        files = self.backups()
        remove: list[str] = []
        if self.max_backups:
            # a backup and its compressed copy count once (lumberjack's preserved set)
            seen: set[str] = set()
            kept = []
            for t, name in files:
                base = name[:-3] if name.endswith(".gz") else name
                if base in seen or len(seen) < self.max_backups:
                    seen.add(base)
                    kept.append((t, name))
                else:
                    remove.append(name)
            files = kept
        if self.max_age:
            cutoff = self.now() - self.max_age * 86400
            remove.extend(name for t, name in files if t < cutoff)
            files = [(t, name) for t, name in files if t >= cutoff]
        for name in remove:
            os.remove(os.path.join(self.dir, name))
        if self.compress:
            for _, name in files:
                if not name.endswith(".gz"):
                    self._gzip(os.path.join(self.dir, name))

    @staticmethod
    def _gzip(src: str) -> None:
        """Upstream: compressLogFile (the copy first, then the original removed)."""
        with open(src, "rb") as f, gzip.open(src + ".gz", "wb") as gz:
            shutil.copyfileobj(f, gz)
        os.remove(src)

    def close(self) -> None:
        self.file.close()
