"""Two ways for kubeplane to speak to etcd, compared: gRPC (grpcio, with the etcd v3 stubs that
aetcd ships) and etcd's JSON gateway over HTTP/1.1 (aiohttp, already a dependency).

Run:  python benchmarks/etcd_clients.py --endpoint http://127.0.0.1:2379 [-n 2000]

Each client: n guarded creates (a Txn: create_revision == 0 -> put, else range), sequential and
16 at a time; ranges of the n keys (one request); and n events read from one prefix watch.
Printed: wall seconds and the client's CPU µs per operation (process time; etcd's own CPU is
not counted: it is the same for both).
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import time
import uuid

import aiohttp
import orjson

VALUE = orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x" * 20, "namespace": "default"},
                      "spec": {"containers": [{"name": "c", "image": "nginx", "args": ["a"] * 100}]}})


def prefix_end(prefix: bytes) -> bytes:
    return prefix[:-1] + bytes([prefix[-1] + 1])


class Gateway:
    """etcd's grpc-gateway: POST /v3/kv/txn etc., base64 keys and values."""
    name = "json gateway (aiohttp)"

    def __init__(self, endpoint: str) -> None:
        self.url = endpoint
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64))

    async def call(self, path: str, body: dict) -> dict:
        async with self.session.post(self.url + path, data=orjson.dumps(body)) as r:
            return orjson.loads(await r.read())

    async def create(self, key: bytes, value: bytes) -> int:
        k = base64.b64encode(key).decode()
        resp = await self.call("/v3/kv/txn", {
            "compare": [{"key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0"}],
            "success": [{"request_put": {"key": k, "value": base64.b64encode(value).decode()}}],
            "failure": [{"request_range": {"key": k}}]})
        return int(resp["header"]["revision"])

    async def range(self, prefix: bytes) -> int:
        resp = await self.call("/v3/kv/range", {"key": base64.b64encode(prefix).decode(),
                                                "range_end": base64.b64encode(prefix_end(prefix)).decode()})
        return len([base64.b64decode(kv["value"]) for kv in resp.get("kvs", ())])

    async def watch(self, prefix: bytes, start: int, n: int) -> None:
        body = {"create_request": {"key": base64.b64encode(prefix).decode(),
                                   "range_end": base64.b64encode(prefix_end(prefix)).decode(),
                                   "start_revision": str(start)}}
        seen = 0
        async with self.session.post(self.url + "/v3/watch", data=orjson.dumps(body)) as r:
            buf = b""
            async for chunk in r.content.iter_any():
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        for ev in orjson.loads(line)["result"].get("events", ()):
                            base64.b64decode(ev["kv"]["value"])
                            seen += 1
                if seen >= n:
                    return

    async def close(self) -> None:
        await self.session.close()


class Grpc:
    """gRPC with grpc.aio and etcd's generated stubs (as shipped in aetcd.rpc)."""
    name = "gRPC (grpcio)"

    def __init__(self, endpoint: str) -> None:
        import grpc
        from aetcd import rpc
        self.rpc = rpc
        self.channel = grpc.aio.insecure_channel(endpoint.split("://", 1)[1])
        self.kv = rpc.KVStub(self.channel)
        self.watch_stub = rpc.WatchStub(self.channel)

    async def create(self, key: bytes, value: bytes) -> int:
        rpc = self.rpc
        req = rpc.TxnRequest(
            compare=[rpc.Compare(key=key, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL, create_revision=0)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=value))],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=key))])
        resp = await self.kv.Txn(req)
        return resp.header.revision

    async def range(self, prefix: bytes) -> int:
        resp = await self.kv.Range(self.rpc.RangeRequest(key=prefix, range_end=prefix_end(prefix)))
        return len([kv.value for kv in resp.kvs])

    async def watch(self, prefix: bytes, start: int, n: int) -> None:
        rpc = self.rpc

        async def requests():
            yield rpc.WatchRequest(create_request=rpc.WatchCreateRequest(
                key=prefix, range_end=prefix_end(prefix), start_revision=start))
            await asyncio.sleep(3600)

        seen = 0
        call = self.watch_stub.Watch(requests())
        async for resp in call:
            seen += len(resp.events)
            if seen >= n:
                call.cancel()
                return

    async def close(self) -> None:
        await self.channel.close()


async def measure(what: str, n: int, fn) -> None:
    c0, t0 = time.process_time(), time.perf_counter()
    await fn()
    c1, t1 = time.process_time(), time.perf_counter()
    print(f"  {what:32s} {t1 - t0:6.2f} s wall, {(c1 - c0) / n * 1e6:6.1f} µs client CPU per op")


async def run(client, n: int) -> None:
    print(client.name)
    base = f"/bench/{uuid.uuid4().hex[:8]}/".encode()
    keys = [base + b"a/%06d" % i for i in range(n)]
    first = await client.create(base + b"start", b"x")

    async def sequential() -> None:
        for k in keys:
            await client.create(k, VALUE)

    async def concurrent() -> None:
        it = iter(base + b"b/%06d" % i for i in range(n))

        async def worker() -> None:
            for k in it:
                await client.create(k, VALUE)
        await asyncio.gather(*(worker() for _ in range(16)))

    await measure("create, sequential", n, sequential)
    await measure("create, 16 concurrent", n, concurrent)
    await measure(f"range of {n} keys (x5)", 5 * n, lambda: asyncio.gather(*(client.range(base + b"a/") for _ in range(5))))
    await measure(f"watch: {2 * n} events", 2 * n, lambda: client.watch(base, first + 1, 2 * n))
    await client.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", default="http://127.0.0.1:2379")
    ap.add_argument("-n", type=int, default=2000)
    args = ap.parse_args()
    async def one(cls: type) -> None:
        await run(cls(args.endpoint), args.n)

    for cls in (Gateway, Grpc, Gateway, Grpc):
        asyncio.run(one(cls))


if __name__ == "__main__":
    main()
