"""`kubeplane snapshot`: back up and restore the embedded store, and move it to etcd.

    kubeplane snapshot save FILE [--data-dir DIR]       # while `up` runs or not: a consistent copy
    kubeplane snapshot restore FILE [--data-dir DIR]    # `up` stopped: DIR's store becomes FILE's
    kubeplane snapshot migrate --etcd-servers URLS [--etcd-*] [--data-dir DIR]

save copies DIR/state.db with SQLite's online backup (a reader in WAL mode: `up` goes on
writing), as `etcdctl snapshot save` copies an etcd member. The Secrets in it stay sealed with
DIR/encryption-config.yaml's key: keep that file (and DIR/pki, which the kubeconfigs trust)
with the snapshot. restore refuses while an `up` runs on DIR and checks that FILE is a
kubeplane store first; the next `up` serves FILE's objects, with their resourceVersions.

migrate copies every current object of DIR's store into etcd (the prefix must be empty), each
value sealed again with the same encryption configuration: `up --storage etcd` then serves
them. Objects keep their uid, names and timestamps; their resourceVersions are etcd's, so
clients relist, as after an etcd restore upstream.

Upstream: `etcdctl snapshot save/restore` (the documented etcd backup of a cluster).
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import sqlite3
import sys
from typing import Any

from ..storage.etcd import DEFAULT_ETCD_PREFIX, EtcdConfig
from .datadir import DataDirLock
from .errors import Fatal, describe
from .flags import comma_list

STATE = "state.db"
_TABLES = {"kv", "log", "meta"}


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("snapshot", help="save, restore or migrate to etcd the embedded store")
    verbs = p.add_subparsers(dest="verb", required=True)
    for verb, help_text in (("save", "copy DIR/state.db to FILE (online, consistent)"),
                            ("restore", "replace DIR/state.db by FILE (up stopped)")):
        v = verbs.add_parser(verb, help=help_text)
        v.add_argument("file", type=pathlib.Path)
        v.add_argument("--data-dir", type=pathlib.Path, default=pathlib.Path(".kubeplane"))
        v.set_defaults(func=run)
    m = verbs.add_parser("migrate", help="copy every object of DIR's store into etcd (up stopped)")
    m.add_argument("--data-dir", type=pathlib.Path, default=pathlib.Path(".kubeplane"))
    m.add_argument("--etcd-servers", type=comma_list, required=True, metavar="URLS")
    m.add_argument("--etcd-prefix", default=DEFAULT_ETCD_PREFIX)
    for name in ("cafile", "certfile", "keyfile"):
        m.add_argument(f"--etcd-{name}", default=None, metavar="FILE")
    m.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    data_dir = args.data_dir.resolve()
    try:
        if args.verb == "save":
            print(save(data_dir, args.file))
        elif args.verb == "restore":
            print(restore(args.file, data_dir))
        else:
            config = EtcdConfig(args.etcd_servers, args.etcd_prefix, args.etcd_cafile, args.etcd_certfile,
                                args.etcd_keyfile)
            print(asyncio.run(migrate(data_dir, config)))
    except Fatal as err:
        print(f"Error: {err}", file=sys.stderr, flush=True)
        return 1
    return 0


def save(data_dir: pathlib.Path, file: pathlib.Path) -> str:
    """An online backup of data_dir/state.db into file (0600); what was saved, as one line."""
    source = data_dir / STATE
    if not source.exists():
        raise Fatal(f"{source} does not exist (is {data_dir} a kubeplane data dir?)")
    if file.exists():
        raise Fatal(f"{file} exists: not overwriting it")
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        try:
            dst = sqlite3.connect(str(file))
            try:
                src.backup(dst)
                revision = _check(dst, file)
            finally:
                dst.close()
        finally:
            src.close()
        file.chmod(0o600)
    except (sqlite3.Error, OSError) as err:
        file.unlink(missing_ok=True)
        raise Fatal(f"snapshot of {source} failed: {describe(err) if isinstance(err, OSError) else err}") from None
    return (f"saved {source} at revision {revision} to {file}; its Secrets need {data_dir / 'encryption-config.yaml'} "
            f"(keep it, and {data_dir / 'pki'}, with the snapshot)")


def restore(file: pathlib.Path, data_dir: pathlib.Path) -> str:
    """data_dir/state.db becomes a copy of file; refused while `up` runs there."""
    try:
        snap = sqlite3.connect(f"file:{file}?mode=ro", uri=True)
        try:
            revision = _check(snap, file)
        finally:
            snap.close()
    except sqlite3.Error as err:
        raise Fatal(f"{file} is not a kubeplane snapshot: {err}") from None
    lock = DataDirLock.acquire(data_dir, holder="kubeplane up (stop it first)")
    try:
        tmp = data_dir / (STATE + ".restoring")
        tmp.unlink(missing_ok=True)
        src, dst = sqlite3.connect(f"file:{file}?mode=ro", uri=True), sqlite3.connect(str(tmp))
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
        tmp.chmod(0o600)
        for suffix in ("-wal", "-shm"):          # the old store's journal must not replay onto the new
            (data_dir / (STATE + suffix)).unlink(missing_ok=True)
        tmp.replace(data_dir / STATE)
    except (sqlite3.Error, OSError) as err:
        raise Fatal(f"restore into {data_dir} failed: {describe(err) if isinstance(err, OSError) else err}") from None
    finally:
        lock.release()
    return f"restored {file} (revision {revision}) into {data_dir / STATE}"


def _check(db: sqlite3.Connection, name: pathlib.Path) -> int:
    """The store's revision, after checking that db holds a kubeplane store, intact."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not _TABLES <= tables:
        raise Fatal(f"{name} is not a kubeplane store (tables: {', '.join(sorted(tables)) or 'none'})")
    if (ok := db.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
        raise Fatal(f"{name} is damaged: {ok}")
    row = db.execute("SELECT max(rev) FROM log").fetchone()
    return int(row[0] or 0)


async def migrate(data_dir: pathlib.Path, config: EtcdConfig) -> str:
    """Copy the current objects of data_dir's store into etcd under config.prefix."""
    from ..api.resources import RESOURCES
    from ..storage import new_storage
    from ..storage.value import new_storage_transformer
    if not (data_dir / STATE).exists():
        raise Fatal(f"{data_dir / STATE} does not exist")
    lock = DataDirLock.acquire(data_dir, holder="kubeplane up (stop it first)")
    try:
        encryption = data_dir / "encryption-config.yaml"
        transformer = new_storage_transformer(encryption, RESOURCES) if encryption.exists() else None
        source = new_storage("sqlite", data_dir, transformer=transformer)
        target = new_storage("etcd", etcd=config, transformer=transformer)
        try:
            await target.start()
        except Exception as err:             # noqa: BLE001 - one line, whatever etcd said
            await source.close()
            raise Fatal(f"etcd: {err}") from None
        try:
            if await target.count("/registry/"):
                raise Fatal(f"etcd already holds objects under {config.prefix}: not mixing two clusters' data")
            kvs, revision = await source.list("/registry/")
            for kv in kvs:
                await target.create(kv.key, kv.obj)
        finally:
            await target.close()
            await source.close()
    finally:
        lock.release()
    return (f"copied {len(kvs)} objects (revision {revision} of {data_dir / STATE}) to etcd under {config.prefix}: "
            f"kubeplane up --storage etcd --etcd-prefix {config.prefix} ...")
