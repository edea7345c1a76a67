"""process_next_work_item: sync, report to the error handler, always mark the key done."""
from __future__ import annotations

from kubeplane.client.util.workqueue import Queue
from kubeplane.client.util.workqueue.worker import process_next_work_item

from ._helpers import bounded


async def test_each_outcome_reaches_the_error_handler_and_the_key_is_done() -> None:
    q: Queue[str] = Queue()
    seen: list[tuple[str | None, str]] = []

    async def sync(key: str) -> None:
        if key == "bad":
            raise ValueError("boom")

    def handle_err(err: Exception | None, key: str) -> None:
        seen.append((repr(err) if err else None, key))

    for k in ("good", "bad"):
        q.add(k)
    assert await bounded(process_next_work_item(q, sync, handle_err))
    assert await bounded(process_next_work_item(q, sync, handle_err))
    assert seen == [(None, "good"), ("ValueError('boom')", "bad")]
    q.add("bad")                                      # done() was called: the key is handed out again
    assert await bounded(process_next_work_item(q, sync, handle_err)) and seen[-1][1] == "bad"
    q.shut_down()
    assert not await bounded(process_next_work_item(q, sync, handle_err))
