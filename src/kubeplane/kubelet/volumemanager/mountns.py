"""A container's own mount namespace: its volumes at their mountPaths, nothing changed on the host.

    enter({"root": ".../rootfs/<ctr>", "mounts": [{"source", "target", "readOnly", "file"}], "cwd": "/data"})
    join(pid, cwd)                          # exec into a running container's mounts (nsenter -m -r)

Both run in a child between fork and exec (Popen's preexec_fn, from the shim: shim.py loads
this file by path, since it imports nothing of kubeplane), so they use the standard library
only (ctypes for unshare/mount/setns; os.unshare is Python 3.12).

What enter does, in the child:
1. unshare(CLONE_NEWNS), and every mount made private (nothing propagates back to the host);
2. a tmpfs at `root` (a directory of the pod's, empty on the host) that mirrors the host's `/`:
   each top-level entry recursively bind-mounted (symlinks copied), so the container sees the
   host's filesystem as a container on a shared image would;
3. each mount, parents first: its target created inside the mirror, then the volume's
   directory (or file, for a subPath that is one) bind-mounted there, read-only if asked. A
   target whose parent comes from the host (`/etc/app`) is made in a tmpfs overlaid on that
   parent, holding bind mounts of its entries (a "shadow"), so the host's /etc gets no new
   directory;
4. chroot to the mirror and chdir to the working directory.

Why ctypes rather than util-linux (`unshare --mount` + `mount --bind` in a shell): the same
syscalls, without one exec of unshare, one of sh and one of mount per volume on every container
start, and with errors as errno values rather than a shell's stderr to parse; util-linux's
advantage (no code of ours) is small since the steps are a few dozen syscalls. Measured
(benchmarks/mountns_start.py, 4 volumes, median of 20 starts of `true`): no mounts 2.6 ms,
ctypes 5.9 ms (with the mirrored root), util-linux 27.6 ms (without one).

Upstream: what runc does with the OCI spec's mounts for a container (libcontainer
rootfs_linux.go: prepareRoot, mountToRootfs, createIfNotExists, remount read-only) over a
rootfs that here is the host's own, mirrored.
"""
from __future__ import annotations

import ctypes
import os
import stat
from typing import Any

CLONE_NEWNS = 0x00020000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

# Loaded here, in the parent: a dlopen between fork and exec could deadlock on a lock another
# thread of the parent held at the fork.
# dlopen(NULL): the interpreter's own symbols, libc's among them (find_library would run ldconfig).
_libc: Any = ctypes.CDLL(None, use_errno=True)


def _lib() -> Any:
    return _libc


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(_lib().unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_lib().setns(fd, nstype), "setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_lib().mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data)),
           f"mount {source or fstype or ''} on {target}")


def _b(s: str | None) -> bytes | None:
    return s.encode() if s is not None else None


def umount(target: str, flags: int = MNT_DETACH) -> None:
    _check(_lib().umount2(target.encode(), flags), f"umount {target}")


def supported() -> bool:
    """Whether this process may create mount namespaces (tried in a throw-away child)."""
    pid = os.fork()
    if pid == 0:
        try:
            unshare(CLONE_NEWNS)
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# --- entering a new namespace -----------------------------------------------------------------

def enter(args: dict[str, Any]) -> None:
    """Steps 1-4 of the module docstring (in the child, before exec)."""
    root = args["root"]
    unshare(CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID, "mode=755")
    _mirror("/", root, skip=root)
    ours = {root}                                   # directories on our tmpfs: mkdir is harmless
    for m in sorted(args.get("mounts") or (), key=lambda m: m["target"].rstrip("/").count("/")):
        target = _ensure(root, m["target"], bool(m.get("file")), ours)
        mount(m["source"], target, None, MS_BIND | MS_REC)
        if m.get("readOnly"):
            mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
    os.chroot(root)
    os.chdir(args.get("cwd") or "/")


def join(pid: int, cwd: str = "/") -> None:
    """Enter the mount namespace and root of a running container (for exec), as
    `nsenter -m -r -t PID` does: setns, then chroot to its root."""
    ns_fd = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
    root_fd = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY)
    try:
        setns(ns_fd, CLONE_NEWNS)
        os.fchdir(root_fd)
        os.chroot(".")
    finally:
        os.close(ns_fd)
        os.close(root_fd)
    os.chdir(cwd or "/")


def _mirror(src: str, dst: str, skip: str = "") -> None:
    """Give dst (an empty tmpfs) an entry per entry of src: directories and files bind-mounted
    (recursively), symlinks copied. skip: a path under src whose copy inside dst is detached
    (the tmpfs itself, mounted below src)."""
    for name in sorted(os.listdir(src)):
        s, d = os.path.join(src, name), os.path.join(dst, name)
        st = os.lstat(s)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(s), d)
            continue
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(d, st.st_mode & 0o7777)
        else:
            os.close(os.open(d, os.O_CREAT | os.O_WRONLY, 0o600))
        mount(s, d, None, MS_BIND | MS_REC)
        if skip and stat.S_ISDIR(st.st_mode) and (skip + "/").startswith(s.rstrip("/") + "/"):
            inner = os.path.join(dst, skip.lstrip("/"))
            if os.path.ismount(inner):
                umount(inner)               # the copy of our own tmpfs, taken by the rbind


def _ensure(root: str, target: str, is_file: bool, ours: set[str]) -> str:
    """The path inside root where target lives, created (a file or a directory) if missing.
    Symlinks on the way resolve inside root; a missing entry below a host directory is made
    in a shadow of that directory (see _shadow)."""
    cur = root
    parts = [p for p in target.split("/") if p and p != "."]
    hops = 0
    while parts:
        name = parts.pop(0)
        if name == "..":
            cur = os.path.dirname(cur) if cur != root else root
            continue
        nxt = os.path.join(cur, name)
        if os.path.islink(nxt):
            hops += 1
            if hops > 40:
                raise OSError(40, f"too many levels of symbolic links: {target}")
            link = os.readlink(nxt)
            if link.startswith("/"):
                cur = root
            parts = [p for p in link.split("/") if p and p != "."] + parts
            continue
        if not os.path.lexists(nxt):
            if cur not in ours:
                _shadow(root, cur)
                ours.add(cur)
            if parts or not is_file:
                os.mkdir(nxt, 0o755)
                ours.add(nxt)
            else:
                os.close(os.open(nxt, os.O_CREAT | os.O_WRONLY, 0o644))
        cur = nxt
    return cur


def _shadow(root: str, d: str) -> None:
    """Overlay directory d (a host directory seen in the mirror) with a tmpfs holding bind
    mounts of its entries, so that new entries can be made in d without touching the host."""
    staging = os.path.join(root, f".shadow-{len(os.listdir(root))}")
    os.mkdir(staging, 0o700)
    mount("tmpfs", staging, "tmpfs", MS_NOSUID, f"mode={os.stat(d).st_mode & 0o7777:o}")
    _mirror(d, staging)
    mount(staging, d, None, MS_BIND | MS_REC)
    umount(staging)
    os.rmdir(staging)
