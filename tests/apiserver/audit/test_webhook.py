"""The audit webhook backend and the truncate and batch options (upstream: plugin/pkg/audit/
webhook, truncate, buffered and their tests; options/audit.go's validation), against a real
HTTPS receiver (kubeplane.testing.audit_receiver)."""
from __future__ import annotations

import asyncio
import dataclasses
import pathlib
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from kubeplane.apiserver.audit import metrics
from kubeplane.apiserver.audit import options as audit_options
from kubeplane.apiserver.audit import policy as p
from kubeplane.apiserver.audit.buffered import MODE_BLOCKING, MODE_BLOCKING_STRICT, BatchOptions, TokenBucket
from kubeplane.apiserver.audit.event import AuditContext
from kubeplane.apiserver.audit.filter import Auditor
from kubeplane.apiserver.audit.truncate import TruncateBackend, TruncateOptions, UnionBackend
from kubeplane.apiserver.audit.webhook import (
    DEFAULT_BATCH, WebhookBackend, WebhookClient, WebhookError, event_list, with_exponential_backoff,
)
from kubeplane.testing.audit_receiver import AuditReceiver

METADATA_ALL = b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
REQUEST_ALL = b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"


@pytest.fixture
def receiver() -> Iterator[AuditReceiver]:
    r = AuditReceiver(token="audit-token").start()
    yield r
    r.close()


def context(level: str = p.METADATA, annotations: dict[str, str] | None = None) -> AuditContext:
    ac = AuditContext(p.RequestAuditConfig(level=level), None, "id-1", 1_700_000_000.0)  # type: ignore[arg-type]
    ac.verb, ac.request_uri = "create", "/api/v1/namespaces/default/configmaps"
    ac.annotations.update(annotations or {})
    return ac


# --- the EventList, the retries, the throttle ------------------------------------------------------


def test_event_list_items_carry_no_kind() -> None:
    ac = context()
    body = orjson.loads(event_list([ac.encode("RequestReceived", "t1"), ac.encode("ResponseComplete", "t2")]))
    assert list(body)[:4] == ["kind", "apiVersion", "metadata", "items"]
    assert (body["kind"], body["apiVersion"], body["metadata"]) == ("EventList", "audit.k8s.io/v1", {})
    assert [list(i)[:3] for i in body["items"]] == [["level", "auditID", "stage"]] * 2
    assert [i["stage"] for i in body["items"]] == ["RequestReceived", "ResponseComplete"]


def test_retries_back_off_then_give_up() -> None:
    """Upstream: DefaultRetryBackoffWithInitialDelay — 5 attempts, factor 1.5 (jitter left out here)."""
    waits: list[float] = []
    calls = 0

    def fail() -> None:
        nonlocal calls
        calls += 1
        raise WebhookError("down")
    with pytest.raises(WebhookError):
        with_exponential_backoff(fail, 10.0, waits.append, jitter=lambda: 0.0)
    assert calls == 5 and waits == [10.0, 15.0, 22.5, 33.75]
    waits.clear()
    attempts = iter([WebhookError("a"), WebhookError("b"), None])

    def third_time() -> None:
        if (e := next(attempts)) is not None:
            raise e
    with_exponential_backoff(third_time, 1.0, waits.append, jitter=lambda: 1.0)
    assert waits == pytest.approx([1.2, 1.8])     # each wait up to 20 % longer


def test_token_bucket_bursts_then_paces() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s
    bucket = TokenBucket(10, 3, sleep=sleep, now=lambda: now[0])
    for _ in range(3):
        bucket.accept()
    assert slept == []
    bucket.accept()
    bucket.accept()
    assert slept == pytest.approx([0.1, 0.1])
    now[0] += 1.0                                 # a quiet second refills the burst, no more
    for _ in range(3):
        bucket.accept()
    assert len(slept) == 2


@pytest.mark.parametrize(("opts", "message"), [
    (BatchOptions(mode="fast"), 'invalid audit webhook mode fast, allowed modes are "batch,blocking,blocking-strict"'),
    (BatchOptions(buffer_size=0), "invalid audit batch webhook buffer size 0, must be a positive number"),
    (BatchOptions(max_batch_size=0), "invalid audit batch webhook max batch size 0, must be a positive number"),
    (BatchOptions(throttle_enable=True, throttle_qps=0, throttle_burst=1),
     "invalid audit batch webhook throttle QPS 0, must be a positive number"),
    (BatchOptions(throttle_enable=True, throttle_qps=1, throttle_burst=0),
     "invalid audit batch webhook throttle burst 0, must be a positive number"),
])
def test_batch_options_validation(opts: BatchOptions, message: str) -> None:
    assert opts.validate("webhook") == [message]
    assert BatchOptions(mode=MODE_BLOCKING, buffer_size=0).validate("webhook") == []     # unused: not checked


def test_truncate_options_validation() -> None:
    assert TruncateOptions(max_event_size=0).validate("log") == [
        "invalid audit truncate log max event size 0, must be a positive number"]
    assert TruncateOptions(max_batch_size=10, max_event_size=20).validate("log") == [
        "invalid audit truncate log max batch size 10, must be greater than max event size (20)"]


def test_options_validation_and_configuration_errors(tmp_path: pathlib.Path, api: Any) -> None:
    opts = audit_options.AuditOptions(webhook_config_file=str(tmp_path / "none"),
                                      webhook_batch=BatchOptions(max_batch_size=-1), webhook_version="v2")
    assert opts.validate() == ["invalid audit batch webhook max batch size -1, must be a positive number",
                               'invalid group version, allowed versions are ["audit.k8s.io/v1"]']
    (tmp_path / "policy.yaml").write_bytes(METADATA_ALL)
    (tmp_path / "empty.kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    bad = audit_options.AuditOptions(policy_file=str(tmp_path / "policy.yaml"),
                                     webhook_config_file=str(tmp_path / "empty.kubeconfig"))
    with pytest.raises(ValueError, match="^initializing audit webhook: invalid configuration"):
        audit_options.configure(api.server, bad)


# --- truncation -------------------------------------------------------------------------------------


class Taken:
    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def process(self, ac: Any, stage: str, ts: str, line: bytes | None = None) -> bool:
        assert line is not None
        self.lines.append(line)
        return True

    def shutdown(self) -> None:
        pass


def test_truncate_drops_objects_then_the_event() -> None:
    taken = Taken()
    small = context(p.REQUEST_RESPONSE)
    small.request_object = orjson.Fragment(b'{"a":1}')
    limit = len(small.encode("ResponseComplete", "t")) + 60     # room for the truncated annotation
    backend = TruncateBackend(taken, limit)
    assert backend.process(small, "ResponseComplete", "t") is True
    assert orjson.loads(taken.lines[-1])["requestObject"] == {"a": 1}       # under the limit: untouched
    big = context(p.REQUEST_RESPONSE)
    big.request_object = orjson.Fragment(orjson.dumps({"data": "x" * 1000}))
    backend.process(big, "ResponseComplete", "t")
    ev = orjson.loads(taken.lines[-1])
    assert "requestObject" not in ev and ev["annotations"] == {"audit.k8s.io/truncated": "true"}
    before = metrics.errors.get("truncate", 0)
    huge = context(p.METADATA, annotations={"k": "v" * 1000})     # Metadata: nothing to strip
    assert backend.process(huge, "ResponseComplete", "t") is True
    assert len(taken.lines) == 2 and backend.dropped == 1 and metrics.errors["truncate"] == before + 1


# --- the backend against a receiver ------------------------------------------------------------------


def client_for(receiver: AuditReceiver, tmp_path: pathlib.Path, token: str = "audit-token") -> WebhookClient:
    return WebhookClient.from_kubeconfig(receiver.kubeconfig(tmp_path / "audit.kubeconfig", token))


async def test_batch_mode_posts_event_lists(receiver: AuditReceiver, tmp_path: pathlib.Path) -> None:
    backend = WebhookBackend(client_for(receiver, tmp_path),
                             batch=BatchOptions(max_batch_size=2, max_batch_wait=30.0, buffer_size=10))
    ac = context()
    for stage in ("RequestReceived", "ResponseComplete", "RequestReceived"):
        assert backend.process(ac, stage, "t") is True           # the request does not wait
    receiver.wait_for(lambda evs: len(evs) >= 2)
    assert [len(lst["items"]) for lst in receiver.lists] == [2]     # max size 2: one batch of two
    await asyncio.to_thread(backend.shutdown)                        # the third is sent at shutdown
    assert [len(lst["items"]) for lst in receiver.lists] == [2, 1]
    assert receiver.headers[0]["Content-Type"] == "application/json"
    assert receiver.refused == 0 and backend.sent == 3


async def test_blocking_modes(receiver: AuditReceiver, tmp_path: pathlib.Path) -> None:
    """blocking: the request waits for its event, errors ignored; blocking-strict: a failure is False."""
    for mode, expected in ((MODE_BLOCKING, True), (MODE_BLOCKING_STRICT, False)):
        backend = WebhookBackend(client_for(receiver, tmp_path, token="wrong"), batch=BatchOptions(mode=mode),
                                 initial_backoff=0.0)
        assert await backend.process(context(), "RequestReceived", "t") is expected
        await asyncio.to_thread(backend.shutdown)
    assert receiver.refused == 10 and receiver.lists == []        # 5 attempts each, all refused
    backend = WebhookBackend(client_for(receiver, tmp_path), batch=BatchOptions(mode=MODE_BLOCKING_STRICT))
    assert await backend.process(context(), "RequestReceived", "t") is True
    assert len(receiver.events()) == 1
    await asyncio.to_thread(backend.shutdown)


async def test_a_failing_receiver_is_retried(receiver: AuditReceiver, tmp_path: pathlib.Path) -> None:
    waits: list[float] = []
    receiver.fail_next = 2
    backend = WebhookBackend(client_for(receiver, tmp_path), batch=BatchOptions(mode=MODE_BLOCKING_STRICT),
                             initial_backoff=10.0, sleep=waits.append)
    assert await backend.process(context(), "RequestReceived", "t") is True
    assert len(waits) == 2 and 10.0 <= waits[0] <= 12.0 and 15.0 <= waits[1] <= 18.0
    assert len(receiver.events()) == 1
    await asyncio.to_thread(backend.shutdown)


async def test_audited_requests_reach_the_webhook_and_the_log(api: Any, receiver: AuditReceiver,
                                                              tmp_path: pathlib.Path) -> None:
    """configure() with both backends: every event goes to each (upstream: audit.Union)."""
    (tmp_path / "policy.yaml").write_bytes(REQUEST_ALL)
    opts = audit_options.AuditOptions(
        policy_file=str(tmp_path / "policy.yaml"), log_path=str(tmp_path / "audit.log"),
        webhook_config_file=str(receiver.kubeconfig(tmp_path / "audit.kubeconfig", "audit-token")),
        webhook_batch=dataclasses.replace(DEFAULT_BATCH, max_batch_size=2))
    auditor = audit_options.configure(api.server, opts)
    assert isinstance(auditor, Auditor) and isinstance(auditor.sink, UnionBackend)
    r = await api.call("POST", api.CMS, body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    assert r.status == 201
    evs = receiver.wait_for(lambda e: len(e) >= 2)
    received, complete = evs
    assert (received["stage"], complete["stage"]) == ("RequestReceived", "ResponseComplete")
    assert complete["auditID"] == dict(r.headers)["audit-id"] and complete["level"] == "RequestResponse"
    assert complete["requestObject"]["metadata"]["name"] == "c" and complete["responseStatus"]["code"] == 201
    await asyncio.to_thread(auditor.shutdown)
    logged = [orjson.loads(line) for line in (tmp_path / "audit.log").read_bytes().splitlines()]
    assert [{k: v for k, v in e.items() if k not in ("kind", "apiVersion")} for e in logged] == evs


async def test_the_log_backend_throttled_writes_batches_at_the_rate() -> None:
    """--audit-log-batch-throttle-*: at most max_batch_size events a write, a token per write."""
    from kubeplane.apiserver.audit import log as auditlog

    class Out:
        def __init__(self) -> None:
            self.writes: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.writes.append(data)

        def flush(self) -> None:
            pass
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s
    out = Out()
    backend = auditlog.LogBackend(out, mode=auditlog.MODE_BATCH, throttle=TokenBucket(2, 1, sleep=sleep,
                                                                                      now=lambda: now[0]),
                                  max_batch_size=2)
    ac = context()
    for _ in range(5):
        backend.process(ac, "RequestReceived", "t")
    await asyncio.to_thread(backend.shutdown)
    assert len(out.writes) == 5
    assert len(slept) >= 2 and all(s == pytest.approx(0.5) for s in slept)     # 2 batches a second
