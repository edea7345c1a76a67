"""The data dir of `kubeplane up`: one instance at a time, readable by its user only.

A second `up` on a data dir in use would write the same SQLite log under the first one's
feet (and replace its kubeconfig), so `up` holds an exclusive flock on DATA_DIR/up.lock for
its whole life, taken before it writes anything. The lock file records the holder's PID and,
once it listens, its port, so the refusal can name them. The lock is the kernel's: it goes
away with the process, however the process ends (kill -9 included), and the file itself is
never deleted (deleting a lock file races with the next one to open it).

The descriptor is close-on-exec and not inherited (PEP 446), so no container process the
kubelet starts can keep the lock alive after `up` exits.

Upstream: etcd locks its WAL files with flock (fileutil.TryLockFile) and keeps its data
dir 0700 (fileutil.PrivateDirMode).
"""
from __future__ import annotations

import errno
import fcntl
import os
import pathlib

from ..utils.files import PRIVATE_FILE_MODE, make_private_dir, tighten
from .errors import Fatal, describe

LOCK_FILE = "up.lock"
# What `up` keeps in the data dir; an older version made them 0644/0755, so they are
# tightened at start. Anything else there (a user's own files) is left alone.
OWNED = ("pki", "kubeconfig", "controller-manager.conf", "scheduler.conf", "state.db", "state.db-wal", "state.db-shm", "kubelet", LOCK_FILE)


class DataDirInUse(Fatal):
    pass


class DataDirLock:
    """An exclusive flock on DATA_DIR/up.lock, held until release() or process exit."""

    def __init__(self, path: pathlib.Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._fields: dict[str, str] = {}

    @classmethod
    def acquire(cls, data_dir: pathlib.Path, name: str = LOCK_FILE, holder: str = "kubeplane up") -> DataDirLock:
        """Create data_dir (0700) if missing and lock data_dir/name; DataDirInUse if another
        process (`holder`, for the message) has it.

        Nothing else is changed until the lock is held: an existing data dir keeps its modes.
        """
        path = data_dir / name
        try:
            if not data_dir.exists():
                make_private_dir(data_dir)
        except OSError as err:
            raise Fatal(f"data dir {data_dir} is not usable: {describe(err, 'mkdir')}") from None
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE)
        except OSError as err:
            raise Fatal(f"data dir {data_dir} is not usable: {describe(err, 'open')}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            fields = _read_fields(fd)
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise Fatal(f"data dir {data_dir} is not usable: {describe(err, 'flock')}") from None
            raise DataDirInUse(f"data dir {data_dir} is in use by another {holder} ({_describe_holder(fields)})") from None
        lock = cls(path, fd)
        lock.record(pid=str(os.getpid()))
        return lock

    def record(self, **fields: str) -> None:
        """Add fields (pid, port) to the lock file, rewritten in place: a rename would make
        a new file that nobody holds a lock on."""
        self._fields.update(fields)
        data = "".join(f"{k}={v}\n" for k, v in self._fields.items()).encode()
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)          # closing the only descriptor drops the flock
            self._fd = -1


def tighten_data_dir(data_dir: pathlib.Path) -> None:
    """0700 for the data dir and what `up` owns in it (directories), 0600 for files."""
    make_private_dir(data_dir)
    for name in OWNED:
        tighten(data_dir / name)


def _read_fields(fd: int) -> dict[str, str]:
    try:
        text = os.pread(fd, 4096, 0).decode(errors="replace")
    except OSError:
        return {}
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _describe_holder(fields: dict[str, str]) -> str:
    parts = [f"pid {fields['pid']}" if "pid" in fields else "pid unknown"]
    if "port" in fields:
        parts.append(f"port {fields['port']}")
    return ", ".join(parts)
