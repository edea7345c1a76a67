"""Captured container output: one CRI-format log file per container attempt.

Each line the process writes becomes one record, as containerd writes them under
/var/log/pods and the kubelet reads them back for `kubectl logs`:

    2024-05-01T10:00:00.123456789Z stderr F 127.0.0.1 - - [01/May/2024 10:00:00] "GET / HTTP/1.1" 200 -

`F` marks a full line (the newline is implied), `P` a piece of a line: a line longer than
MAX_LINE, or the last bytes before the stream closed without a newline.

Upstream: the CRI log format (cri-api/pkg/apis/runtime/v1 and
pkg/kubelet/kuberuntime/logs/logs.go: ReadLogs, parseCRILog, LogOptions).
"""
from __future__ import annotations

import asyncio
import datetime as dt
import pathlib
from dataclasses import dataclass
from typing import AsyncIterator, Callable

MAX_LINE = 16 * 1024          # containerd splits longer lines into P records (maxMsgSize)


def rfc3339_nano(ns: int) -> str:
    """Go's time.RFC3339Nano in UTC: trailing zeros of the fraction trimmed.

    Example: 1714557600_123450000 ns -> "2024-05-01T10:00:00.12345Z"; a whole second has no fraction.
    """
    sec, frac = divmod(ns, 1_000_000_000)
    base = dt.datetime.fromtimestamp(sec, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        base += "." + f"{frac:09d}".rstrip("0")
    return base + "Z"


def parse_rfc3339_nano(s: str) -> int:
    """Nanoseconds since the epoch for an RFC3339Nano UTC timestamp (as written here)."""
    s = s.rstrip("Z")
    whole, _, frac = s.partition(".")
    sec = dt.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc).timestamp()
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
    """The log file of one attempt: written by the runtime's pipe readers, read by
    container_logs. Followers wait on `changed()`, which fires on every write and on close.
    Invariant: once `closed`, the file never grows again.
    """

    def __init__(self, path: pathlib.Path, now_ns: Callable[[], int]) -> None:
        self.path = path
        self.now_ns = now_ns
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(path, "ab")
        self._pending: dict[str, bytes] = {"stdout": b"", "stderr": b""}
        self._event = asyncio.Event()
        self.closed = False

    def write(self, stream: str, data: bytes) -> None:
        """Record data read from stream, one record per complete line."""
        buf = self._pending[stream] + data
        lines = buf.split(b"\n")
        self._pending[stream] = lines.pop()
        ts = self.now_ns()
        for line in lines:
            self._append(ts, stream, False, line)
        while len(self._pending[stream]) >= MAX_LINE:
            head, self._pending[stream] = self._pending[stream][:MAX_LINE], self._pending[stream][MAX_LINE:]
            self._append(ts, stream, True, head)
        self._wake()

    def end(self, stream: str) -> None:
        """The stream closed: keep what is left of its last line as a partial record."""
        rest = self._pending[stream]
        self._pending[stream] = b""
        if rest:
            self._append(self.now_ns(), stream, True, rest)
            self._wake()

    def close(self) -> None:
        if not self.closed:
            for stream in self._pending:
                self.end(stream)
            self._f.close()
            self.closed = True
            self._wake()

    def _append(self, ts: int, stream: str, partial: bool, content: bytes) -> None:
        self._f.write(b"%s %s %s %s\n" % (rfc3339_nano(ts).encode(), stream.encode(), b"P" if partial else b"F",
                                          content))
        self._f.flush()

    def _wake(self) -> None:
        ev, self._event = self._event, asyncio.Event()
        ev.set()

    async def changed(self) -> None:
        """Return after the next write or close."""
        await self._event.wait()

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
