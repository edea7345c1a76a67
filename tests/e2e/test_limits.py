"""Request limits against a real `kubeplane up` with small in-flight limits: a burst of HTTPS
requests over the limit is answered 429 with Retry-After, open watches take no slot, and
/metrics counts what happened in Prometheus' text format."""
from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from .cluster import Cluster

READ_LIMIT, WRITE_LIMIT = 2, 1


@pytest.fixture(scope="module")
def limited() -> Iterator[Cluster]:
    c = Cluster(extra_args=("--max-requests-inflight", str(READ_LIMIT),
                            "--max-mutating-requests-inflight", str(WRITE_LIMIT))).start()
    try:
        yield c
    finally:
        c.cleanup()


class Client:
    """aiohttp over HTTPS with the kubeconfig's CA and token: raw statuses and headers."""

    def __init__(self, cluster: Cluster) -> None:
        cfg = yaml.safe_load(cluster.kubeconfig.read_text())
        entry = cfg["clusters"][0]["cluster"]
        self.server = entry["server"]
        self.ssl = ssl.create_default_context(cadata=base64.b64decode(entry["certificate-authority-data"]).decode())
        self.headers = {"Authorization": f"Bearer {cfg['users'][0]['user']['token']}",
                        "Content-Type": "application/json"}

    def session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(headers=self.headers,
                                     connector=aiohttp.TCPConnector(ssl=self.ssl, limit=100))


def configmap(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})


async def burst(c: Client, n: int) -> list[tuple[int, str, Any]]:
    async with c.session() as s:
        async def post(i: int) -> tuple[int, str, Any]:
            async with s.post(f"{c.server}/api/v1/namespaces/default/configmaps",
                              data=configmap(f"burst-{i}")) as r:
                return r.status, r.headers.get("Retry-After", ""), await r.json()
        return await asyncio.gather(*(post(i) for i in range(n)))


def test_a_burst_over_the_limit_is_answered_429(limited: Cluster) -> None:
    answers = asyncio.run(burst(Client(limited), 60))
    statuses = [a[0] for a in answers]
    assert set(statuses) <= {201, 429}, statuses
    assert 429 in statuses and 201 in statuses
    for status, retry_after, body in answers:
        if status == 429:
            assert retry_after == "1"
            assert body["reason"] == "TooManyRequests" and body["details"] == {"retryAfterSeconds": 1}
            assert body["message"] == "Too many requests, please try again later."
    created = limited.get_json("configmaps")["items"]
    assert len([i for i in created if i["metadata"]["name"].startswith("burst-")]) == statuses.count(201)


def test_open_watches_take_no_slot(limited: Cluster) -> None:
    async def run() -> list[int]:
        c = Client(limited)
        async with c.session() as s:
            watches = [await s.get(f"{c.server}/api/v1/namespaces/default/configmaps",
                                   params={"watch": "1", "timeoutSeconds": "60"}) for _ in range(READ_LIMIT + 2)]
            try:
                assert all(w.status == 200 for w in watches)
                gets = []
                for _ in range(3):           # one at a time: only the watches could fill the budget
                    async with s.get(f"{c.server}/api/v1/namespaces/default/configmaps") as r:
                        gets.append(r.status)
                return gets
            finally:
                for w in watches:
                    w.close()

    assert asyncio.run(run()) == [200, 200, 200]


def test_metrics_count_the_refused_requests(limited: Cluster) -> None:
    asyncio.run(burst(Client(limited), 30))
    text = limited.kubectl("get", "--raw", "/metrics").stdout
    families = {f.name: f for f in text_string_to_metric_families(text)}
    refused = [s for s in families["apiserver_request"].samples
               if s.name == "apiserver_request_total" and s.labels["code"] == "429"]
    assert refused and refused[0].labels["verb"] == "POST" and refused[0].labels["resource"] == "configmaps"
    assert sum(s.value for s in refused) > 0
    terminated = [s for s in families["apiserver_request_terminations"].samples if s.labels.get("code") == "429"]
    assert sum(s.value for s in terminated) == sum(s.value for s in refused)
    kinds = {s.labels["request_kind"] for s in families["apiserver_current_inflight_requests"].samples}
    assert kinds == {"readOnly", "mutating"}


def test_metrics_is_not_for_anonymous(limited: Cluster) -> None:
    """/metrics: upstream's system:monitoring role, not system:public-info-viewer."""
    async def anonymous() -> int:
        c = Client(limited)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=c.ssl)) as s, \
                s.get(f"{c.server}/metrics") as r:
            return r.status

    assert asyncio.run(anonymous()) == 403


def test_a_bad_timeout_parameter_is_upstreams_400(limited: Cluster) -> None:
    res = limited.kubectl("get", "--raw", "/api/v1/namespaces?timeout=10parsecs", check=False)
    assert res.returncode != 0
    assert ('invalid timeout specified in the request URL - time: unknown unit "parsecs" in duration '
            '"10parsecs"') in res.stderr


def test_kubectl_request_timeout_is_honoured(limited: Cluster) -> None:
    """kubectl --request-timeout sends ?timeout=; a generous one changes nothing."""
    assert "default" in limited.kubectl("get", "namespaces", "--request-timeout=30s").stdout
