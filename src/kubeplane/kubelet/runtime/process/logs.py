"""Captured container output: one CRI-format log file per container attempt.

Each line the process writes becomes one record (written by the attempt's shim, shim.py, so the
log keeps growing while the kubelet is down), as containerd writes them under
/var/log/pods and the kubelet reads them back for `kubectl logs`:

    2024-05-01T10:00:00.123456789Z stderr F 127.0.0.1 - - [01/May/2024 10:00:00] "GET / HTTP/1.1" 200 -

`F` marks a full line (the newline is implied), `P` a piece of a line: a line longer than
MAX_LINE, or the last bytes before the stream closed without a newline.

Upstream: the CRI log format (cri-api/pkg/apis/runtime/v1 and
pkg/kubelet/kuberuntime/logs/logs.go: ReadLogs, parseCRILog, LogOptions).
"""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import pathlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from .shim import LogWriter, rfc3339_nano

__all__ = ["ContainerLog", "LogRecord", "LogWriter", "parse_record", "parse_rfc3339_nano", "rfc3339_nano",
           "stream_log"]

POLL_INTERVAL = 0.1           # seconds between looks at a followed log (the shim writes it)


def parse_rfc3339_nano(s: str) -> int:
    """Nanoseconds since the epoch for an RFC3339Nano UTC timestamp (as written here)."""
    s = s.rstrip("Z")
    whole, _, frac = s.partition(".")
    sec = dt.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC).timestamp()
    return int(sec) * 1_000_000_000 + int((frac or "0").ljust(9, "0")[:9])


@dataclass(frozen=True, slots=True)
class LogRecord:
    ts: int            # nanoseconds since the epoch
    stream: str        # "stdout" or "stderr"
    partial: bool
    content: bytes

    def render(self, timestamps: bool) -> bytes:
        """The bytes `kubectl logs` shows for this record. Upstream: the kubelet's logWriter."""
        out = self.content if self.partial else self.content + b"\n"
        return (rfc3339_nano(self.ts).encode() + b" " + out) if timestamps else out


def parse_record(line: bytes) -> LogRecord | None:
    """Upstream: parseCRILog. Malformed lines (never written here) are skipped."""
    parts = line.rstrip(b"\n").split(b" ", 3)
    if len(parts) < 3:
        return None
    content = parts[3] if len(parts) == 4 else b""
    try:
        ts = parse_rfc3339_nano(parts[0].decode())
    except ValueError:
        return None
    return LogRecord(ts, parts[1].decode(), parts[2] == b"P", content)


class ContainerLog:
    """The log file of one attempt, as the kubelet reads it (the attempt's shim writes it).

    Followers wait on `changed()`: the next poll of the file, or the attempt's end (close()).
    Invariant: once `closed`, the file never grows again (the shim has exited).
    """

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self._ended = asyncio.Event()
        self.closed = False

    def close(self) -> None:
        """The attempt has ended: nothing more will be written."""
        self.closed = True
        self._ended.set()

    async def changed(self) -> None:
        """Return after the next look at the file is due, or at once when the attempt ended."""
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
            await asyncio.wait_for(self._ended.wait(), POLL_INTERVAL)

    def read_from(self, offset: int) -> tuple[list[LogRecord], int]:
        """The complete records from byte offset on, and the offset after the last one."""
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            return [], offset
        end = data.rfind(b"\n") + 1
        records = [r for line in data[:end].splitlines() if (r := parse_record(line)) is not None]
        return records, offset + end


async def stream_log(log: ContainerLog, *, follow: bool = False, tail_lines: int | None = None,
                     limit_bytes: int | None = None, timestamps: bool = False,
                     since_ns: int | None = None) -> AsyncIterator[bytes]:
    """A container's output per the pods/log options.

    tail_lines counts records from the end (as the kubelet does); since_ns drops records
    older than that time; limit_bytes cuts the output, mid-line if need be, and ends a follow.
    follow: after what is there, stream new records until the attempt has ended.
    Example: records a, b, c with tail_lines=2, limit_bytes=3 -> b"b\\nc" (3 bytes).
    Upstream: ReadLogs (pkg/kubelet/kuberuntime/logs/logs.go)
    """
    records, offset = log.read_from(0)
    if since_ns is not None:
        records = [r for r in records if r.ts >= since_ns]
    if tail_lines is not None:
        records = records[-tail_lines:] if tail_lines > 0 else []
    left = limit_bytes
    while True:
        for r in records:
            out = r.render(timestamps)
            if left is not None:
                out = out[:left]
                left -= len(out)
            if out:
                yield out
            if left is not None and left <= 0:
                return
        if not follow:
            return
        closed = log.closed
        records, offset = log.read_from(offset)
        if records:
            continue
        if closed:
            return
        await log.changed()
        records, offset = log.read_from(offset)
