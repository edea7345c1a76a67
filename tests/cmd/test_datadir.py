"""The data-dir lock and file modes (in-process: flock conflicts between two opens of the file)."""
from __future__ import annotations

import os
import pathlib
import stat

import pytest

from kubeplane.cmd.datadir import LOCK_FILE, DataDirInUse, DataDirLock, tighten_data_dir
from kubeplane.cmd.errors import Fatal


def mode(p: pathlib.Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


def test_second_lock_is_refused_naming_pid_and_port(tmp_path: pathlib.Path) -> None:
    first = DataDirLock.acquire(tmp_path / "d")
    first.record(port="6443")
    try:
        with pytest.raises(DataDirInUse) as e:
            DataDirLock.acquire(tmp_path / "d")
        assert str(e.value) == (f"data dir {tmp_path / 'd'} is in use by another kubeplane up "
                                f"(pid {os.getpid()}, port 6443)")
    finally:
        first.release()
    DataDirLock.acquire(tmp_path / "d").release()         # free again once released


def test_record_rewrites_in_place(tmp_path: pathlib.Path) -> None:
    lock = DataDirLock.acquire(tmp_path)
    inode = (tmp_path / LOCK_FILE).stat().st_ino
    lock.record(port="123456")
    lock.record(port="1")
    assert (tmp_path / LOCK_FILE).read_text() == f"pid={os.getpid()}\nport=1\n"
    assert (tmp_path / LOCK_FILE).stat().st_ino == inode     # the locked file, not a replacement
    lock.release()


def test_new_data_dir_is_private(tmp_path: pathlib.Path) -> None:
    DataDirLock.acquire(tmp_path / "a" / "b").release()
    assert mode(tmp_path / "a" / "b") == 0o700
    assert mode(tmp_path / "a" / "b" / LOCK_FILE) == 0o600


def test_unusable_data_dir(tmp_path: pathlib.Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(Fatal, match=r"is not usable: mkdir .*/file/d: not a directory"):
        DataDirLock.acquire(tmp_path / "file" / "d")


def test_tighten_owned_entries_only(tmp_path: pathlib.Path) -> None:
    os.chmod(tmp_path, 0o755)
    (tmp_path / "pki").mkdir(mode=0o755)
    (tmp_path / "pki" / "ca.crt").write_text("x")
    os.chmod(tmp_path / "pki" / "ca.crt", 0o644)
    (tmp_path / "kubeconfig").write_text("x")
    os.chmod(tmp_path / "kubeconfig", 0o644)
    (tmp_path / "notes.txt").write_text("the user's own")
    os.chmod(tmp_path / "notes.txt", 0o644)
    (tmp_path / "kubelet").mkdir(mode=0o755)
    os.symlink("/etc/hostname", tmp_path / "kubelet" / "link")
    tighten_data_dir(tmp_path)
    assert [mode(tmp_path / p) for p in ("", "pki", "pki/ca.crt", "kubeconfig", "kubelet")] == \
        [0o700, 0o700, 0o600, 0o600, 0o700]
    assert mode(tmp_path / "notes.txt") == 0o644                 # not ours: left alone
    assert mode(pathlib.Path("/etc/hostname")) & 0o044           # links are not followed
