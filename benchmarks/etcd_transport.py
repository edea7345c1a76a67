"""What one etcd call costs the client, by transport: the floor under EtcdStorage's CPU per write.

    PYTHONPATH=src .venv/bin/python benchmarks/etcd_transport.py [-n 3000] [--rounds 2]

One etcd member of its own (TLS). Client CPU (time.process_time, every thread of this process)
per call, for -n guarded creates (a Txn of ~1 KB) 16 at a time, through:

  grpcio aio        grpc.aio's unary call (what storage/etcd.py uses)
  grpcio future     the synchronous channel's .future(), completed onto the event loop
  grpcio threads    blocking calls on a pool of 16 threads (run_in_executor)
  grpclib           the pure-Python gRPC client on h2 (no threads), if importable

and per watch event received by grpcio aio's stream while another process writes -n keys (the
message every write costs the watch cache). The event loop is uvloop's, as `kubeplane up` runs.
"""
from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import ssl
import subprocess
import sys
import tempfile
import time
from typing import Any, Awaitable, Callable

import grpc  # type: ignore[import-untyped]
from aetcd import rpc  # type: ignore[import-untyped]

from kubeplane.storage.etcd import EtcdConfig, _prefix_end
from kubeplane.testing.etcd import EtcdCluster

VALUE = b"x" * 1000
CONCURRENCY = 16
WRITER = r'''
import sys, grpc, concurrent.futures
from aetcd import rpc
ca, key, crt, target, prefix, n = sys.argv[1:]
r = lambda p: open(p, "rb").read()
ch = grpc.secure_channel(target, grpc.ssl_channel_credentials(r(ca), r(key), r(crt)),
                         options=[("grpc.ssl_target_name_override", "127.0.0.1")])
kv = rpc.KVStub(ch)
with concurrent.futures.ThreadPoolExecutor(16) as ex:
    list(ex.map(lambda i: kv.Put(rpc.PutRequest(key=f"{prefix}/{i}".encode(), value=b"x" * 1000)), range(int(n))))
'''


def txn(prefix: str, i: int) -> Any:
    k = f"{prefix}/{i}".encode()
    return rpc.TxnRequest(
        compare=[rpc.Compare(key=k, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL, create_revision=0)],
        success=[rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=VALUE))])


async def calls(name: str, n: int, prefix: str, call: Callable[[Any], Awaitable[Any]]) -> None:
    it = iter(range(n))

    async def caller() -> None:
        for i in it:
            await call(txn(prefix, i))

    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(caller() for _ in range(CONCURRENCY)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{name:15s} {n / wall:7,.0f} calls/s  {cpu / n * 1e6:5.0f} µs CPU per call", flush=True)


async def watch_events(cfg: EtcdConfig, channel: Any, n: int, prefix: bytes) -> None:
    async def requests() -> Any:
        yield rpc.WatchRequest(create_request=rpc.WatchCreateRequest(key=prefix, range_end=_prefix_end(prefix)))
        await asyncio.Event().wait()

    call = rpc.WatchStub(channel).Watch(requests())
    stream = call.__aiter__()
    await stream.__anext__()                                 # the watch is created
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(cfg.cafile), str(cfg.keyfile), str(cfg.certfile),
                               cfg.servers[0].split("://")[1], prefix.decode().rstrip("/"), str(n)])
    seen = messages = 0
    c0 = time.process_time()
    async for resp in stream:
        messages += 1
        seen += sum(1 for ev in resp.events if ev.kv.mod_revision)
        if seen >= n:
            break
    cpu = time.process_time() - c0
    call.cancel()
    writer.wait()
    print(f"{'watch (aio)':15s} {cpu / n * 1e6:5.0f} µs CPU per event received, {n / messages:.1f} events per message")


async def main_async(cfg: EtcdConfig, args: argparse.Namespace) -> None:
    def read(p: str | None) -> bytes:
        with open(str(p), "rb") as f:
            return f.read()

    target = cfg.servers[0].split("://")[1]
    creds = grpc.ssl_channel_credentials(read(cfg.cafile), read(cfg.keyfile), read(cfg.certfile))
    options = [("grpc.ssl_target_name_override", "127.0.0.1")]
    aio = grpc.aio.secure_channel(target, creds, options=options)
    await aio.channel_ready()
    sync = grpc.secure_channel(target, creds, options=options)
    grpc.channel_ready_future(sync).result()
    akv, skv = rpc.KVStub(aio), rpc.KVStub(sync)
    loop = asyncio.get_running_loop()
    pool = concurrent.futures.ThreadPoolExecutor(CONCURRENCY)

    def future(request: Any) -> asyncio.Future[Any]:
        fut = loop.create_future()

        def done(g: Any) -> None:
            try:
                loop.call_soon_threadsafe(fut.set_result, g.result())
            except Exception as e:   # noqa: BLE001 - handed to the caller
                loop.call_soon_threadsafe(fut.set_exception, e)

        skv.Txn.future(request, timeout=60).add_done_callback(done)
        return fut

    closers: list[Callable[[], None]] = [sync.close]
    modes: list[tuple[str, Callable[[Any], Awaitable[Any]]]] = [
        ("grpcio aio", lambda r: akv.Txn(r, timeout=60)),
        ("grpcio future", future),
        ("grpcio threads", lambda r: loop.run_in_executor(pool, lambda: skv.Txn(r, timeout=60)))]
    try:
        from grpclib.client import Channel, UnaryUnaryMethod  # type: ignore[import-not-found]
    except ImportError:
        print("(grpclib not importable: left out)")
    else:
        ctx = ssl.create_default_context(cafile=cfg.cafile)
        ctx.load_cert_chain(str(cfg.certfile), str(cfg.keyfile))
        ctx.set_alpn_protocols(["h2"])
        host, port = target.rsplit(":", 1)
        gl = Channel(host, int(port), ssl=ctx)
        method = UnaryUnaryMethod(gl, "/etcdserverpb.KV/Txn", rpc.TxnRequest, rpc.TxnResponse)
        modes.append(("grpclib", lambda r: method(r, timeout=60)))
        closers.append(gl.close)
    for rnd in range(args.rounds):
        for i, (name, call) in enumerate(modes):
            await calls(name, args.n, f"/r{rnd}-{i}", call)
        await watch_events(cfg, aio, args.n, f"/w{rnd}/".encode())
    await aio.close()
    for close in closers:
        close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("-n", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    import uvloop
    uvloop.install()
    with tempfile.TemporaryDirectory() as tmp, EtcdCluster(tmp) as cluster:
        asyncio.run(main_async(cluster.config(), args))


if __name__ == "__main__":
    main()
