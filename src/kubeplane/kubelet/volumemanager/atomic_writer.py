"""The kubelet's atomic writer: a volume's files replaced all at once, as readers see them.

    AtomicWriter(target_dir).write({"app.conf": FileProjection(b"x=1", 0o644)})

Layout of target_dir after a write (what a container sees at its mountPath):

    ..2026_11_27_03_30_00.123456789/app.conf   the payload, in a fresh timestamped directory
    ..data -> ..2026_11_27_03_30_00.123456789  swapped atomically (a rename over it)
    app.conf -> ..data/app.conf                one symlink per top-level path of the payload

A reader that opens `app.conf` follows `..data` once, so it gets the old payload or the new one,
never half of each. Steps of write (numbered as upstream's):
  1. validate the payload's paths (relative, no `..` element, not starting with `..`);
  2. read the current `..data` link (none: first write);
  3. the user-visible paths of the old payload that the new one drops;
  4. whether anything changed (a file's content or mode, or paths dropped), else skip to 9;
  5. a new timestamped directory; 6. the payload written into it;
  7. a `..data_tmp` symlink to it, 8. renamed over `..data`;
  9. user-visible symlinks for new top-level paths; 10. dropped ones removed;
  11. the old timestamped directory removed.

Upstream: AtomicWriter.Write, validatePath, pathsToRemove, shouldWritePayload,
writePayloadToDir, createUserVisiblePaths, removeUserVisiblePaths
(pkg/volume/util/atomic_writer.go).
"""
from __future__ import annotations

import logging
import os
import pathlib
import shutil
import tempfile
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

MAX_FILE_NAME_LENGTH = 255
MAX_PATH_LENGTH = 4096
DATA_DIR_NAME = "..data"
NEW_DATA_DIR_NAME = "..data_tmp"


@dataclass(frozen=True)
class FileProjection:
    """One file of a payload: its bytes and mode. Upstream: volumeutil.FileProjection"""

    data: bytes
    mode: int = 0o644


def validate_path(target_path: str) -> None:
    """Raise ValueError unless target_path may name a file of a payload. Upstream: validatePath"""
    if target_path == "":
        raise ValueError(f'invalid path: must not be empty: "{target_path}"')
    if target_path.startswith("/"):
        raise ValueError(f"invalid path: must be relative path: {target_path}")
    if len(target_path) > MAX_PATH_LENGTH:
        raise ValueError(f"invalid path: must be less than or equal to {MAX_PATH_LENGTH} characters")
    items = target_path.split("/")
    for item in items:
        if item == "..":
            raise ValueError(f"invalid path: must not contain '..': {target_path}")
        if len(item) > MAX_FILE_NAME_LENGTH:
            raise ValueError(f"invalid path: filenames must be less than or equal to {MAX_FILE_NAME_LENGTH} characters")
    if items[0].startswith("..") and len(items[0]) > 2:
        raise ValueError(f"invalid path: must not start with '..': {target_path}")


def validate_payload(payload: dict[str, FileProjection]) -> dict[str, FileProjection]:
    """The payload with its paths cleaned (path.Clean), each validated. Upstream: validatePayload"""
    clean: dict[str, FileProjection] = {}
    for k, content in payload.items():
        validate_path(k)
        clean[os.path.normpath(k)] = content
    return clean


class AtomicWriter:
    """Writes payloads into one target directory (see the module docstring)."""

    def __init__(self, target_dir: str | os.PathLike[str], log_context: str = "") -> None:
        self.target_dir = pathlib.Path(target_dir)
        self.log_context = log_context

    def write(self, payload: dict[str, FileProjection]) -> bool:
        """Make the directory show payload (steps 1-11 above); whether files were rewritten."""
        clean = validate_payload(payload)                                    # 1
        data_dir = self.target_dir / DATA_DIR_NAME
        try:                                                                 # 2
            old_ts_dir = os.readlink(data_dir)
        except FileNotFoundError:
            old_ts_dir = ""
        old_ts_path = self.target_dir / old_ts_dir if old_ts_dir else None
        to_remove: set[str] = set()
        should_write = True
        if old_ts_path is not None:
            to_remove = self.paths_to_remove(clean, old_ts_path)             # 3
            # 4: also when only paths go (kubernetes#121472: a write that removes nothing and
            # changes nothing keeps the data directory as it is)
            should_write = bool(to_remove) or should_write_payload(clean, old_ts_path)
        if should_write:
            ts_dir = self.new_timestamp_dir()                                # 5
            write_payload_to_dir(clean, ts_dir)                              # 6
            tmp_link = self.target_dir / NEW_DATA_DIR_NAME
            if tmp_link.is_symlink():
                tmp_link.unlink()
            os.symlink(ts_dir.name, tmp_link)                                # 7
            os.rename(tmp_link, data_dir)                                    # 8
        self.create_user_visible_paths(clean)                                # 9
        self.remove_user_visible_paths(to_remove)                            # 10
        if should_write and old_ts_path is not None:                         # 11
            shutil.rmtree(old_ts_path, ignore_errors=True)
        return should_write

    def paths_to_remove(self, payload: dict[str, FileProjection], old_ts_dir: pathlib.Path) -> set[str]:
        """Every path of the old payload (files and directories) that neither the new payload
        nor a directory of it holds. Upstream: pathsToRemove"""
        paths: set[str] = set()
        for dirpath, dirnames, filenames in os.walk(old_ts_dir):
            rel = os.path.relpath(dirpath, old_ts_dir)
            for name in dirnames + filenames:
                paths.add(name if rel == "." else f"{rel}/{name}")
        new_paths: set[str] = set()
        for f in payload:
            sub = f
            while sub:
                new_paths.add(sub)
                sub = os.path.dirname(sub)
        return paths - new_paths

    def new_timestamp_dir(self) -> pathlib.Path:
        """A fresh `..<UTC time>.<random>` directory (mode 0755). Upstream: newTimestampDir"""
        prefix = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
        ts_dir = pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir=self.target_dir))
        ts_dir.chmod(0o755)
        return ts_dir

    def create_user_visible_paths(self, payload: dict[str, FileProjection]) -> None:
        """A `name -> ..data/name` symlink for each top-level element of the payload that has
        none yet. Upstream: createUserVisiblePaths"""
        for path in payload:
            top = path.split("/", 1)[0]
            visible = self.target_dir / top
            if not os.path.lexists(visible):
                os.symlink(f"{DATA_DIR_NAME}/{top}", visible)

    def remove_user_visible_paths(self, paths: set[str]) -> None:
        """Remove the symlinks of dropped top-level paths (deeper ones go with the old
        timestamped directory). Upstream: removeUserVisiblePaths"""
        last: OSError | None = None
        for p in paths:
            if "/" in p:
                continue
            try:
                os.remove(self.target_dir / p)
            except FileNotFoundError:
                continue
            except OSError as err:
                log.error("Error pruning old user-visible path", extra={"path": p, "err": str(err)})
                last = err
        if last is not None:
            raise last


def should_write_payload(payload: dict[str, FileProjection], old_ts_dir: pathlib.Path) -> bool:
    """Whether any file of payload is missing from the old directory or differs (content or
    mode). Upstream: shouldWritePayload / shouldWriteFile"""
    for path, content in payload.items():
        f = old_ts_dir / path
        try:
            if f.read_bytes() != content.data or (f.stat().st_mode & 0o7777) != content.mode:
                return True
        except OSError:
            return True
    return False


def write_payload_to_dir(payload: dict[str, FileProjection], ts_dir: pathlib.Path) -> None:
    """Write each file (parents 0755), then set its mode exactly (the umask does not apply).

    Upstream: writePayloadToDir
    """
    for path, content in payload.items():
        f = ts_dir / path
        f.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(content.data)
        os.chmod(f, content.mode)
