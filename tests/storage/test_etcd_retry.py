"""The etcd client's retries (storage/etcd_retry.py), as clientv3's interceptor decides them:
reads again on UNAVAILABLE or a cut stream, writes only when they never left."""
from __future__ import annotations

import enum
from typing import Any

import pytest

from kubeplane.storage import etcd_retry


class Code(enum.Enum):
    UNAVAILABLE = 14
    UNKNOWN = 2
    INTERNAL = 13
    FAILED_PRECONDITION = 9


class RpcError(Exception):
    """What grpc.aio.AioRpcError offers: code() and details()."""

    def __init__(self, code: Code, details: str) -> None:
        super().__init__(details)
        self._code, self._details = code, details

    def code(self) -> Code:
        return self._code

    def details(self) -> str:
        return self._details


class Stub:
    """Fails with the given errors, then answers."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def _answer(self, request: Any, **kwargs: Any) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return f"answer to {request}"

    Range = Txn = Compact = _answer


@pytest.fixture(autouse=True)
def no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etcd_retry, "WAIT_BETWEEN", 0.0)


@pytest.mark.parametrize("error", [
    RpcError(Code.UNAVAILABLE, "Socket closed"),
    RpcError(Code.UNAVAILABLE, "etcdserver: leader changed"),
    RpcError(Code.UNKNOWN, "Stream removed"),
    RpcError(Code.INTERNAL, "Stream removed"),
], ids=["member-gone", "leader-changed", "stream-removed", "stream-removed-internal"])
async def test_a_read_is_repeated_on_another_member(error: RpcError) -> None:
    stub = Stub(error, error)
    assert await etcd_retry.RetryingKV(stub).Range("r", timeout=1) == "answer to r"
    assert stub.calls == 3


@pytest.mark.parametrize("error", [
    RpcError(Code.UNAVAILABLE, "Socket closed"),                   # cut in flight: maybe committed
    RpcError(Code.UNAVAILABLE, "etcdserver: leader changed"),
    RpcError(Code.UNKNOWN, "Stream removed"),
    RpcError(Code.FAILED_PRECONDITION, "etcdserver: mvcc: required revision has been compacted"),
], ids=["cut", "leader-changed", "stream-removed", "compacted"])
async def test_a_write_that_may_have_reached_etcd_is_not_repeated(error: RpcError) -> None:
    stub = Stub(error)
    with pytest.raises(RpcError):
        await etcd_retry.RetryingKV(stub).Txn("t")
    assert stub.calls == 1


async def test_a_write_that_found_no_connection_is_repeated() -> None:
    stub = Stub(RpcError(Code.UNAVAILABLE, "failed to connect to all addresses; last error: ..."))
    assert await etcd_retry.RetryingKV(stub).Txn("t") == "answer to t"
    assert stub.calls == 2


async def test_a_read_gives_up_after_its_retries() -> None:
    stub = Stub(*[RpcError(Code.UNAVAILABLE, "Socket closed")] * (etcd_retry.MAX_RETRIES + 1))
    with pytest.raises(RpcError):
        await etcd_retry.RetryingKV(stub).Range("r")
    assert stub.calls == etcd_retry.MAX_RETRIES + 1


async def test_other_errors_and_calls_pass_through() -> None:
    stub = Stub(RpcError(Code.FAILED_PRECONDITION, "etcdserver: mvcc: required revision has been compacted"))
    with pytest.raises(RpcError):
        await etcd_retry.RetryingKV(stub).Range("r")
    assert stub.calls == 1
    assert etcd_retry.RetryingKV(stub).errors == []      # any other attribute is the stub's
