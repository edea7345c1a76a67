"""EtcdStorage: etcd v3 as the store, with a watch cache in memory in front of it.

etcd holds the data and hands out the revisions; every API server keeps the whole keyspace of
its prefix in memory (MemoryStorage: current objects, a sorted key index, the shared watch
log), fed by ONE etcd watch on the prefix. Reads and watches are served from that cache, as
upstream's cacher serves them, so N API servers on one etcd cost etcd one watch each.

- Writes are etcd transactions guarded on the key's revisions (upstream's etcd3 store): create
  `create_revision == 0 -> put`, update and delete `mod_revision == expected -> put/delete`.
  A write returns once its own event is in the cache, so this server's next read and every
  watch from an older revision see it (read-your-writes). etcd numbers its writes one after
  the other, so a write whose revision comes right after the cache's is applied from its own
  transaction's response, without waiting for the watch to bring it back (_apply_own); one
  that found a gap (someone else's write in between) waits for the watch to fill it.
- Reads are linearizable across API servers, as upstream's quorum reads and consistent lists
  from the cache are: a read first learns etcd's current revision from a request sent after
  it began, then waits until the cache has caught up with it. That request is shared by all
  the reads waiting for it: the next revision round trip (a get of one key, two in flight at
  most), or a write's transaction if one is sent first (its header's revision serves as
  well: under writes, reads mostly cost etcd nothing of their own). The watch covers etcd's
  whole keyspace, so that every revision comes with an event, also those of writes outside
  the prefix (the compaction key, another cluster's prefix): their events only move the
  counter. (Upstream asks for progress notifications instead; etcd before 3.4.31 and 3.5.13
  may send one before the events it covers — Debian's is 3.4.23 — and a cache trusting it
  would skip them.)
- resourceVersion is etcd's mod revision. As upstream, the stored value has no
  resourceVersion (PrepareObjectForStorage); the cache stamps it on the objects it serves.
- Values go through the Transformer (encryption at rest) with the etcd key as authenticated
  data, as upstream's value transformers do.
- A compacted watch (the cache fell behind etcd's compaction) relists the prefix and ends every
  watch served from the cache: their clients relist too (410), as upstream's cacher does.

Keys: the API server's `/registry/...` keys become `<etcd prefix>/...` in etcd (`--etcd-prefix`,
default `/registry`). The compaction coordination key lives at etcd's root, as upstream's
`compact_rev_key`.

Upstream: staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go (Create, GuaranteedUpdate,
Delete, conditionalDelete), compact.go (compact, compactor), cacher/cacher.go and
watch_cache.go (the cache), storagebackend/factory/etcd3.go (TLS client, endpoints).
The client is grpcio with etcd's v3 stubs as aetcd ships them (benchmarks/etcd_clients.py
compares it with etcd's JSON gateway through aiohttp: BENCHMARKS.md).
"""
from __future__ import annotations

import asyncio
import builtins
import contextlib
import dataclasses
import heapq
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson

from .interface import EventType, KeyExists, KeyNotFound, KeyValue, RevisionMismatch, StorageError, Transformer, WatchEvent
from .etcd_retry import RetryingKV
from .memory import DEFAULT_HISTORY, MemoryStorage, stamp
from .sorted_keys import SortedKeys
from .watch_log import DEFAULT_HISTORY_BYTES

log = logging.getLogger(__name__)

API_PREFIX = "/registry"
DEFAULT_ETCD_PREFIX = "/registry"          # Upstream: --etcd-prefix
COMPACT_REV_KEY = b"compact_rev_key"       # Upstream: compactRevKey (compact.go)
LIST_PAGE = 1000                           # keys per range while loading the cache
RETRY_PAUSE = (0.1, 2.0)                   # re-watch back-off after a broken stream: first, max
DIAL_TIMEOUT = 20.0                        # Upstream: dialTimeout (storagebackend/factory/etcd3.go)
REQUEST_TIMEOUT = 60.0
ROUND_TRIPS = 2                            # revision round trips in flight at most
_DELETE = 1                                # mvccpb.Event.DELETE


@dataclasses.dataclass(frozen=True)
class EtcdConfig:
    """Where etcd is and how to reach it. Upstream: storagebackend.TransportConfig + Prefix."""

    servers: Sequence[str]                 # --etcd-servers: http(s)://host:port, ...
    prefix: str = DEFAULT_ETCD_PREFIX      # --etcd-prefix
    cafile: str | None = None              # --etcd-cafile
    certfile: str | None = None            # --etcd-certfile
    keyfile: str | None = None             # --etcd-keyfile


def _prefix_end(prefix: bytes) -> bytes:
    """The range end that covers every key starting with prefix (clientv3.GetPrefixRangeEnd)."""
    end = bytearray(prefix)
    for i in range(len(end) - 1, -1, -1):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[:i + 1])
    return b"\0"


def _target(servers: Sequence[str]) -> tuple[str, bool, str]:
    """A gRPC target for the servers, whether they speak TLS, and the host name to verify.
    Several IP addresses become one `ipv4:` target that gRPC balances and fails over between;
    names: the first (resolved by gRPC's dns resolver)."""
    hosts, tls = [], False
    for s in servers:
        scheme, _, hostport = s.rpartition("://")
        tls = tls or scheme == "https"
        hosts.append(hostport.rstrip("/"))
    if not hosts:
        raise ValueError("--etcd-servers must name at least one server")
    first = hosts[0].rsplit(":", 1)[0]
    if len(hosts) > 1 and all(h.rsplit(":", 1)[0].replace(".", "").isdigit() for h in hosts):
        return "ipv4:" + ",".join(hosts), tls, first
    return hosts[0], tls, first


class EtcdStorage(MemoryStorage):
    """The Storage contract on etcd (see the module docstring). `await start()` before use."""

    def __init__(self, config: EtcdConfig, *, history: int = DEFAULT_HISTORY,
                 history_bytes: int = DEFAULT_HISTORY_BYTES, transformer: Transformer | None = None) -> None:
        super().__init__(history=history, history_bytes=history_bytes)
        self.config = config
        self._etcd_prefix = config.prefix.rstrip("/").encode()
        self._range = (self._etcd_prefix + b"/", _prefix_end(self._etcd_prefix + b"/"))
        self._transformer = transformer
        self._channel: Any = None
        self._kv: Any = None
        self._watch_task: asyncio.Task[None] | None = None
        # Our own writes not yet in the cache, by revision: applied as soon as the cache holds
        # the revision before (_apply_own), or by the watch, which then needs no decoding.
        self._own: dict[int, tuple[EventType, KeyValue]] = {}
        self._relisting = False
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._waiter_seq = 0
        self._readers: list[asyncio.Future[int]] = []     # waiting for the next request's revision
        self._trips: set[asyncio.Task[None]] = set()       # senders of revision round trips
        self._trips_running = 0                             # of them, those not finished
        self._trip_due = False                              # one of them is about to send
        self._rpc: Any = None

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, load the prefix into the cache at one revision, and follow it from there."""
        import grpc  # type: ignore[import-untyped]
        from aetcd import rpc  # type: ignore[import-untyped]

        self._rpc = rpc
        target, tls, host = _target(self.config.servers)
        options = [("grpc.max_receive_message_length", 2 * 1024 * 1024 * 1024 - 1),
                   ("grpc.keepalive_time_ms", 30_000),
                   # Several members: spread requests, and go on with the others when one dies.
                   ("grpc.lb_policy_name", "round_robin"),
                   # The name the members' certificates are checked against (an `ipv4:` target
                   # of several addresses has none of its own).
                   ("grpc.ssl_target_name_override", host)]
        if tls:
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read(self.config.cafile), private_key=_read(self.config.keyfile),
                certificate_chain=_read(self.config.certfile))
            self._channel = grpc.aio.secure_channel(target, creds, options=options)
        else:
            self._channel = grpc.aio.insecure_channel(target, options=options)
        self._kv = RetryingKV(rpc.KVStub(self._channel))
        self._watch_stub = rpc.WatchStub(self._channel)
        self._maintenance = rpc.MaintenanceStub(self._channel)
        try:
            await asyncio.wait_for(self._channel.channel_ready(), DIAL_TIMEOUT)
        except asyncio.TimeoutError:
            await self._channel.close()
            raise StorageError(f"etcd: no connection to {', '.join(self.config.servers)} "
                               f"within {DIAL_TIMEOUT:g}s") from None
        rev = await self._load()
        self._watch_task = asyncio.ensure_future(self._follow(rev))

    async def close(self) -> None:
        if self._watch_task is not None:
            self._watch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watch_task
            self._watch_task = None
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        self._fail_waiters(StorageError("etcd storage closed"))
        await super().close()

    # --- keys and values -------------------------------------------------------------------------

    def _etcd_key(self, key: str) -> bytes:
        if not key.startswith(API_PREFIX):
            raise StorageError(f"key {key!r} is outside {API_PREFIX}")
        return self._etcd_prefix + key[len(API_PREFIX):].encode()

    def _api_key(self, etcd_key: bytes) -> str:
        return API_PREFIX + etcd_key[len(self._etcd_prefix):].decode()

    def _encode(self, etcd_key: bytes, obj: dict[str, Any]) -> bytes:
        """The bytes etcd stores: obj without resourceVersion, through the transformer."""
        meta = obj.get("metadata")
        if isinstance(meta, dict) and "resourceVersion" in meta:
            meta = dict(meta)
            del meta["resourceVersion"]
            obj = {**obj, "metadata": meta}
        data = orjson.dumps(obj)
        if self._transformer is not None:
            data = self._transformer.transform_to_storage(etcd_key.decode(), data)
        return data

    def _decode(self, etcd_key: bytes, data: bytes) -> dict[str, Any]:
        if self._transformer is not None:
            data, _stale = self._transformer.transform_from_storage(etcd_key.decode(), data)
        obj = orjson.loads(data)
        if not isinstance(obj, dict):
            raise StorageError(f"etcd: value of {etcd_key!r} is not a JSON object")
        return obj

    def _kv_of(self, etcd_kv: Any) -> KeyValue:
        return stamp(self._api_key(etcd_kv.key), self._decode(etcd_kv.key, etcd_kv.value),
                     etcd_kv.create_revision, etcd_kv.mod_revision)

    # --- reads: linearizable, served from the cache ----------------------------------------------

    async def get(self, key: str) -> KeyValue | None:
        await self._sync()
        return await super().get(key)

    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        await self._sync()
        return await super().list(prefix)

    async def count(self, prefix: str) -> int:
        await self._sync()
        return await super().count(prefix)

    async def _sync(self) -> None:
        """Wait until the cache holds every write etcd had committed when this call began."""
        await self._caught_up(await self._current_revision())

    def _current_revision(self) -> asyncio.Future[int]:
        """etcd's current revision, from a request sent after this call: the next one, shared
        by every caller until it is sent. That is the next revision round trip (ROUND_TRIPS in
        flight at most), or a write's transaction if one goes first: any response's header carries
        etcd's revision when etcd served it, which is all a reader needs. (A future of its own
        per caller: a cancelled reader cancels only its own.)"""
        fut = asyncio.get_running_loop().create_future()
        self._readers.append(fut)
        self._start_round_trip()
        return fut

    def _start_round_trip(self) -> None:
        """A revision round trip for the waiting readers: one about to be sent takes them,
        else a new one, unless ROUND_TRIPS are in flight already (the next to come back sends
        for them). Shared trips keep reads cheap for etcd; two in flight cut a reader's wait
        for one that starts after it from up to two round trips to about one."""
        if not self._trip_due and self._trips_running < ROUND_TRIPS:
            self._trip_due = True
            self._trips_running += 1
            task = asyncio.ensure_future(self._round_trips())
            self._trips.add(task)
            task.add_done_callback(self._trips.discard)

    def _take_readers(self) -> builtins.list[asyncio.Future[int]]:
        """The readers waiting for a request not sent yet: the caller's request, about to be
        sent, answers them with its header's revision (_answer_readers)."""
        readers, self._readers = self._readers, []
        return readers

    def _answer_readers(self, readers: builtins.list[asyncio.Future[int]], revision: int | None,
                        error: Exception | None = None) -> None:
        """Hand readers the revision of a response. Without one: the error, or (a write that
        failed or was cancelled) they wait for the next request instead."""
        if revision is not None:
            for fut in readers:
                if not fut.done():
                    fut.set_result(revision)
        elif error is not None:
            for fut in readers:
                if not fut.done():
                    fut.set_exception(error)
        elif readers:
            self._readers.extend(readers)
            self._start_round_trip()

    async def _round_trips(self) -> None:
        """Send a revision round trip for the waiting readers, and the next while readers
        come in the meantime.

        The request is a get of the prefix key itself (no object lives there): a linearizable
        read of one key, whose cost does not grow with the keyspace as a count of the prefix
        would. Upstream: store.GetCurrentResourceVersion (etcd3/store.go)."""
        self._trip_due = False
        try:
            while readers := self._take_readers():
                try:
                    resp = await self._kv.Range(self._rpc.RangeRequest(key=self._etcd_prefix, keys_only=True),
                                                timeout=REQUEST_TIMEOUT)
                except Exception as e:       # noqa: BLE001 - handed to every waiting reader
                    self._answer_readers(readers, None, _storage_error(e))
                else:
                    self._answer_readers(readers, resp.header.revision)
        finally:                             # at once, not in a done callback: a reader coming
            self._trips_running -= 1         # after the last look at _readers starts another

    async def _caught_up(self, revision: int) -> None:
        """Return once the cache is current up to revision."""
        if self.revision >= revision:
            return
        if self._watch_task is None or self._watch_task.done():
            raise StorageError("etcd: the watch cache is not running")
        fut = asyncio.get_running_loop().create_future()
        self._waiter_seq += 1
        heapq.heappush(self._waiters, (revision, self._waiter_seq, fut))
        await fut

    def _advance(self, revision: int) -> None:
        """The cache is current up to revision (etcd said so): move the counter there, apply
        our own writes that come next, and release the waiters it satisfies."""
        if revision > self.revision:
            self._log.advance(revision)
        if self._own:
            self._apply_own()
        waiters = self._waiters
        while waiters and waiters[0][0] <= self.revision:
            fut = heapq.heappop(waiters)[2]
            if not fut.done():
                fut.set_result(None)

    def _fail_waiters(self, err: Exception) -> None:
        for _, _, fut in self._waiters:
            if not fut.done():
                fut.set_exception(err)
        self._waiters.clear()

    # --- writes: guarded transactions ------------------------------------------------------------

    async def create(self, key: str, obj: dict[str, Any], spec_json: bytes | None = None) -> KeyValue:
        rpc, ek = self._rpc, self._etcd_key(key)
        resp = await self._txn(
            [rpc.Compare(key=ek, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL, create_revision=0)],
            [rpc.RequestOp(request_put=rpc.PutRequest(key=ek, value=self._encode(ek, obj)))])
        if not resp.succeeded:
            raise KeyExists(key)
        rev = resp.header.revision
        return await self._applied(rev, "ADDED", stamp(key, obj, rev, rev, spec_json))

    async def update(self, key: str, obj: dict[str, Any], expected_revision: int | None = None) -> KeyValue:
        rpc, ek = self._rpc, self._etcd_key(key)
        if expected_revision is None:        # last writer wins, as long as the key exists
            guard = rpc.Compare(key=ek, target=rpc.Compare.VERSION, result=rpc.Compare.GREATER, version=0)
        else:
            guard = rpc.Compare(key=ek, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL, mod_revision=expected_revision)
        # The version expected is the cached one: if the guard holds, it is etcd's current one
        # (mod revisions are never reused), and the cache knows its create revision; else etcd
        # sends the previous version back for it.
        cached = self._kvs.get(key)
        known = cached if cached is not None and cached.mod_revision == expected_revision else None
        resp = await self._txn([guard], [rpc.RequestOp(request_put=rpc.PutRequest(
            key=ek, value=self._encode(ek, obj), prev_kv=known is None))], failure_range=ek)
        if not resp.succeeded:
            raise await self._guard_failed(key, resp, expected_revision)
        rev = resp.header.revision
        created = known.create_revision if known is not None else \
            resp.responses[0].response_put.prev_kv.create_revision
        return await self._applied(rev, "MODIFIED", stamp(key, obj, created, rev, None, known))

    async def delete(self, key: str, expected_revision: int | None = None) -> KeyValue:
        rpc, ek = self._rpc, self._etcd_key(key)
        if expected_revision is None:
            guard = rpc.Compare(key=ek, target=rpc.Compare.VERSION, result=rpc.Compare.GREATER, version=0)
        else:
            guard = rpc.Compare(key=ek, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL, mod_revision=expected_revision)
        cached = self._kvs.get(key)           # as in update: the cached version, if expected
        known = cached if cached is not None and cached.mod_revision == expected_revision else None
        resp = await self._txn([guard], [rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(
            key=ek, prev_kv=known is None))], failure_range=ek)
        if not resp.succeeded:
            raise await self._guard_failed(key, resp, expected_revision)
        rev = resp.header.revision
        if known is not None:
            return await self._applied(rev, "DELETED", stamp(key, known.obj, known.create_revision, rev, None,
                                                             known if known.spec_at else None))
        prev_kvs = resp.responses[0].response_delete_range.prev_kvs
        if not prev_kvs:
            raise KeyNotFound(key)
        prev = prev_kvs[0]
        cached = self._kvs.get(key)
        obj = cached.obj if cached is not None and cached.mod_revision == prev.mod_revision else \
            self._decode(prev.key, prev.value)
        return await self._applied(rev, "DELETED", stamp(key, obj, prev.create_revision, rev))

    async def _txn(self, compare: Sequence[Any], success: Sequence[Any], *, failure_range: bytes | None = None) -> Any:
        rpc = self._rpc
        failure = [rpc.RequestOp(request_range=rpc.RangeRequest(key=failure_range, keys_only=True))] \
            if failure_range is not None else []
        readers, revision = self._take_readers(), None    # this request answers them too
        try:
            resp = await self._kv.Txn(rpc.TxnRequest(compare=compare, success=success, failure=failure),
                                      timeout=REQUEST_TIMEOUT)
            revision = resp.header.revision
            return resp
        except Exception as e:               # noqa: BLE001 - grpc.aio.AioRpcError and transport failures
            raise _storage_error(e) from None
        finally:                             # also when cancelled: the readers are not
            self._answer_readers(readers, revision)

    async def _guard_failed(self, key: str, resp: Any, expected_revision: int | None) -> StorageError:
        """Why a guarded write failed, once the cache holds what made it fail: a caller that
        retries on a conflict (a patch: upstream's GuaranteedUpdate retries on the current
        object) then reads the newer object, not the one it just lost with."""
        found = resp.responses[0].response_range.kvs if resp.responses else ()
        await self._caught_up(found[0].mod_revision if found else resp.header.revision)
        if not found:
            return KeyNotFound(key)
        return RevisionMismatch(f"{key}: expected revision {expected_revision}, current {found[0].mod_revision}")

    async def _applied(self, rev: int, type_: EventType, kv: KeyValue) -> KeyValue:
        """Our write is etcd's revision rev: apply it to the cache as soon as the cache holds
        rev - 1 (at once, usually), or let the watch bring it; return once the cache holds it,
        with the KeyValue the cache holds (the watch may have been first with its own decoding)."""
        if self.revision < rev:
            self._own[rev] = (type_, kv)
            self._advance(self.revision)
            await self._caught_up(rev)
        log = self._log
        ev = log.event(rev) if log.oldest_revision < rev <= log.revision else None
        return ev.kv if ev is not None else kv

    def _apply_own(self) -> None:
        """Apply our own writes of the revisions right after the cache's. etcd gives every
        write a revision of its own, one after the other, so when the cache holds rev - 1 and
        our transaction wrote rev, nothing lies between: the cache need not wait for the
        watch to bring its own write back (the watch's copy of it is then skipped as already
        applied). While the cache is being re-listed, the watch brings them."""
        own = self._own
        while not self._relisting and (item := own.get(self.revision + 1)) is not None:
            type_, kv = item
            prev = self._kvs.get(kv.key)
            if (prev is None) != (type_ == "ADDED"):
                return                       # not the state etcd wrote it on: the watch decides
            del own[kv.mod_revision]
            self._apply(WatchEvent(type_, kv, prev, kv.mod_revision))

    # --- the watch that feeds the cache ----------------------------------------------------------

    async def _load(self) -> int:
        """Read every key of the prefix at one revision into the cache; that revision. A cache
        that had data (it fell behind etcd's compaction) is replaced, and its watchers get
        Compacted: they re-list, as upstream's cacher makes them."""
        rpc = self._rpc
        start, end = self._range
        rev = 0
        kvs: list[KeyValue] = []
        while True:
            resp = await self._kv.Range(rpc.RangeRequest(key=start, range_end=end, limit=LIST_PAGE, revision=rev),
                                        timeout=REQUEST_TIMEOUT)
            rev = rev or resp.header.revision
            kvs.extend(self._kv_of(kv) for kv in resp.kvs)
            if not resp.more:
                break
            start = resp.kvs[-1].key + b"\0"
        if self._log.revision == 0:
            oldest, events = await self._history(rev)
            self._restore(rev, kvs, events, oldest)
        else:
            self._kvs = {kv.key: kv for kv in kvs}
            self._keys = SortedKeys()
            for kv in kvs:
                self._keys.add(kv.key)
            self._own.clear()
            self._log.reset(rev, sum(len(kv.value) for kv in kvs))
        return rev

    async def _history(self, rev: int) -> tuple[int, builtins.list[WatchEvent]]:
        """The prefix's events up to rev that etcd still has, as far back as the log holds:
        a restarted API server resumes its clients' watches as SQLite's does from its file.
        Read with a watch from the past (prev_kv for each event's previous version); returns
        the revision the history starts after, and the events."""
        start = max(2, rev - self._log.capacity + 1)         # etcd's first write is revision 2
        if start > rev:
            return rev, []
        try:
            return await asyncio.wait_for(self._replay(start, rev), REQUEST_TIMEOUT)
        except _Compacted as e:                              # etcd has less: from its oldest
            return await asyncio.wait_for(self._replay(e.revision, rev), REQUEST_TIMEOUT)

    async def _replay(self, start: int, rev: int) -> tuple[int, builtins.list[WatchEvent]]:
        rpc = self._rpc

        async def requests() -> AsyncIterator[Any]:
            yield rpc.WatchRequest(create_request=rpc.WatchCreateRequest(
                key=b"\0", range_end=b"\0", start_revision=start, prev_kv=True))
            await asyncio.Event().wait()

        oldest, events = start - 1, builtins.list[WatchEvent]()
        call = self._watch_stub.Watch(requests())
        try:
            async for resp in call:
                if resp.compact_revision:
                    raise _Compacted(resp.compact_revision)
                for ev in resp.events:
                    r = ev.kv.mod_revision
                    if r > rev:
                        return oldest, events
                    if ev.kv.key.startswith(self._range[0]):
                        if events and events[-1].revision == r:     # two keys in one revision
                            oldest, events = r, builtins.list[WatchEvent]()
                            continue
                        if (we := self._past_event(ev)) is None:    # its previous version is gone
                            oldest, events = r, builtins.list[WatchEvent]()
                        else:
                            events.append(we)
                    if r == rev:
                        return oldest, events
            raise StorageError("etcd: watch stream ended")
        finally:
            call.cancel()

    def _past_event(self, ev: Any) -> WatchEvent | None:
        """A WatchEvent from a replayed etcd event and its prev_kv, None if that is missing."""
        kv, rev = ev.kv, ev.kv.mod_revision
        has_prev = bool(ev.prev_kv.key)
        prev = self._kv_of(ev.prev_kv) if has_prev else None
        if ev.type == _DELETE:
            if prev is None:
                return None
            return WatchEvent("DELETED", stamp(prev.key, prev.obj, prev.create_revision, rev), prev, rev)
        if prev is None and kv.create_revision != rev:
            return None
        return WatchEvent("ADDED" if prev is None else "MODIFIED", self._kv_of(kv), prev, rev)

    async def _follow(self, rev: int) -> None:
        """Apply etcd's events after rev to the cache, re-watching after a broken stream."""
        pause = RETRY_PAUSE[0]
        while True:
            try:
                await self._watch_from(self.revision)
            except asyncio.CancelledError:
                raise
            except _Compacted:
                log.warning("etcd: watch cache fell behind compaction at revision %d; relisting", self.revision)
                self._relisting = True
                try:
                    rev = await self._load()
                finally:
                    self._relisting = False
                self._advance(rev)
                pause = RETRY_PAUSE[0]
            except Exception as e:           # noqa: BLE001 - a broken stream: watch again
                log.warning("etcd: watch from revision %d failed (%s); retrying in %.1fs", self.revision + 1, e, pause)
                await asyncio.sleep(pause)
                pause = min(2 * pause, RETRY_PAUSE[1])

    async def _watch_from(self, rev: int) -> None:
        """One watch stream on the whole keyspace from rev + 1, until it breaks."""
        rpc = self._rpc

        async def requests() -> AsyncIterator[Any]:
            yield rpc.WatchRequest(create_request=rpc.WatchCreateRequest(
                key=b"\0", range_end=b"\0", start_revision=rev + 1))
            await asyncio.Event().wait()     # keep the stream open: etcd ends a watch whose
            # request side closes

        call = self._watch_stub.Watch(requests())
        try:
            async for resp in call:
                if resp.compact_revision:
                    raise _Compacted(resp.compact_revision)
                if resp.canceled:
                    raise StorageError(f"etcd: watch canceled: {resp.cancel_reason}")
                for ev in resp.events:
                    self._apply_etcd_event(ev)
                self._advance(self.revision)
            raise StorageError("etcd: watch stream ended")
        finally:
            call.cancel()

    def _apply_etcd_event(self, ev: Any) -> None:
        kv = ev.kv
        rev = kv.mod_revision
        if rev <= self.revision:
            if rev == self.revision and kv.key.startswith(self._range[0]):
                applied = self._log.event(rev) if self._log.oldest_revision < rev else None
                if applied is None or applied.kv.key != self._api_key(kv.key):
                    # A second change in one revision (a multi-key transaction someone else
                    # ran): the log holds one event per revision, so start over from a list.
                    raise _Compacted(rev)
            return                           # already applied
        if not kv.key.startswith(self._range[0]):
            self._log.advance(rev)           # someone else's key: only the counter moves
            return
        key = self._api_key(kv.key)
        own = item[1] if (item := self._own.pop(rev, None)) is not None else None
        prev = self._kvs.get(key)
        if ev.type == _DELETE:
            if prev is not None:
                gone = own if own is not None else stamp(key, prev.obj, prev.create_revision, rev)
                self._apply(WatchEvent("DELETED", gone, prev, rev))
            else:
                self._log.advance(rev)
        else:
            new = own if own is not None else self._kv_of(kv)
            self._apply(WatchEvent("ADDED" if prev is None else "MODIFIED", new, prev, rev))

    # --- compaction --------------------------------------------------------------------------------

    async def compact(self, revision: int) -> None:
        """Compact etcd to revision, once among all API servers sharing it, and the cache's log.

        Upstream: compact (compact.go): a transaction on compact_rev_key's version elects the
        one server that compacts for this interval; the others only trim their caches."""
        rpc = self._rpc
        revision = min(revision, self.revision)
        resp = await self._kv.Range(rpc.RangeRequest(key=COMPACT_REV_KEY), timeout=REQUEST_TIMEOUT)
        version = resp.kvs[0].version if resp.kvs else 0
        txn = await self._kv.Txn(rpc.TxnRequest(
            compare=[rpc.Compare(key=COMPACT_REV_KEY, target=rpc.Compare.VERSION,
                                 result=rpc.Compare.EQUAL, version=version)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=COMPACT_REV_KEY, value=str(revision).encode()))]),
            timeout=REQUEST_TIMEOUT)
        if txn.succeeded and revision > 0:
            try:
                await self._kv.Compact(rpc.CompactionRequest(revision=revision), timeout=REQUEST_TIMEOUT)
            except Exception as e:           # noqa: BLE001 - already compacted by an earlier tick
                if "compacted" not in str(e):
                    raise _storage_error(e) from None
        await super().compact(revision)


class _Compacted(Exception):
    def __init__(self, revision: int) -> None:
        super().__init__(f"compacted at revision {revision}")
        self.revision = revision


def _read(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def _storage_error(e: BaseException) -> StorageError:
    details = getattr(e, "details", None)
    return StorageError(f"etcd: {details() if callable(details) else e}")


__all__ = ["DEFAULT_ETCD_PREFIX", "EtcdConfig", "EtcdStorage"]
