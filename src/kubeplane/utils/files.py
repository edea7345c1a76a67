"""Private files and directories: what `kubeplane up` writes is readable by its user only.

The data dir holds the CA key, the admin token, the kubeconfig and every object (Secrets
included), so directories are 0700 and files 0600, as etcd keeps its data dir
(fileutil.PrivateDirMode, PrivateFileMode) and kubeadm its PKI.
"""
from __future__ import annotations

import os
import pathlib
import stat

PRIVATE_DIR_MODE = 0o700    # Upstream: fileutil.PrivateDirMode (etcd client/pkg/fileutil)
PRIVATE_FILE_MODE = 0o600   # Upstream: fileutil.PrivateFileMode
PUBLIC_FILE_MODE = 0o644


def write_atomic(path: pathlib.Path, data: bytes, private: bool = True) -> None:
    """Write data to path through a temporary file and a rename: 0600, or 0644 if not private.

    Readers see the old file or the new one, never half of one.
    """
    mode = PRIVATE_FILE_MODE if private else PUBLIC_FILE_MODE
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.fchmod(fd, mode)            # a leftover .tmp keeps its old mode through O_CREAT
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def make_private_dir(path: pathlib.Path) -> None:
    """Create path (and missing parents) as 0700; an existing directory is tightened to 0700
    (itself only: what it holds is left as it is)."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        os.chmod(path, PRIVATE_DIR_MODE)


def tighten(path: pathlib.Path) -> None:
    """Drop group and other permissions from path and, for a directory, everything under it
    (symlinks are not followed). For data dirs written by versions that made 0644/0755."""
    for p in _walk(path):
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            continue
        if st.st_mode & 0o077:
            os.chmod(p, st.st_mode & 0o7700)


def _walk(path: pathlib.Path) -> list[pathlib.Path]:
    """path and, if it is a real directory, everything under it (os.walk follows no links)."""
    if not os.path.lexists(path):
        return []
    found = [path]
    if path.is_dir() and not path.is_symlink():
        for root, dirs, files in os.walk(path):
            found.extend(pathlib.Path(root, name) for name in (*dirs, *files))
    return found

