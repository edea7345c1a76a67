"""A TCP load balancer for tests: what HAProxy or a cloud LB does in front of API servers.

    with TCPProxy([("127.0.0.2", 6443), ("127.0.0.3", 6443)]) as lb:
        ... https://127.0.0.1:{lb.port} reaches one of them

Each accepted connection goes to the next backend in turn (round robin); a backend refusing
the connection (a killed API server) is skipped, as a health-checking balancer would. Bytes
are piped both ways until either side closes. It runs its own event loop in a thread, so
synchronous tests (subprocess, kubectl) can use it.
"""
from __future__ import annotations

import asyncio
import itertools
import threading
from types import TracebackType

CONNECT_TIMEOUT = 2.0


class TCPProxy:
    def __init__(self, backends: list[tuple[str, int]], host: str = "127.0.0.1", port: int = 0) -> None:
        self.backends = backends
        self.host, self.port = host, port
        self._next = itertools.count()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self.connections = 0

    def __enter__(self) -> TCPProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, self.host, self.port), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        start = next(self._next)
        for i in range(len(self.backends)):
            host, port = self.backends[(start + i) % len(self.backends)]
            try:
                return await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
            except (OSError, asyncio.TimeoutError):
                continue
        return None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        backend = await self._connect()
        if backend is None:
            writer.close()
            return
        up_reader, up_writer = backend
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()
