"""apiserver_cel_compilation_duration_seconds and apiserver_cel_evaluation_duration_seconds on
/metrics, with upstream's buckets, observed by CRD validation rules.

Upstream: k8s.io/apiserver pkg/cel/metrics (metrics.go, metrics_test.go).
"""
from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from kubeplane.apiserver import metrics as apiserver_metrics
from kubeplane.apiserver.apiextensions import schema
from kubeplane.apiserver.apiextensions.celvalidation.validation import Validator
from kubeplane.apiserver.cel import metrics
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.utils.clock import FakeClock

pytest.importorskip("cel_expr_python")
UPSTREAM_BUCKETS = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "+Inf"]


def count(name: str) -> float:
    return REGISTRY.get_sample_value(f"{name}_count", {}) or 0.0


@pytest.fixture
async def api() -> Any:
    server = APIServer(new_storage("memory"), tokens={"t": "admin"}, clock=FakeClock())
    await server.bootstrap()
    yield server
    await server.storage.close()


async def test_cel_histograms_on_metrics(api: APIServer) -> None:
    apiserver_metrics.register()
    compilations = count("apiserver_cel_compilation_duration_seconds")
    evaluations = count("apiserver_cel_evaluation_duration_seconds")
    s = schema.structural_from({"type": "object", "properties": {
        "a": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]}},
        "x-kubernetes-validations": [{"rule": "has(self.a)"}]})
    v = Validator(s, True)
    assert v.check({"a": 1}, None, "") == []
    assert [str(e) for e in v.check({"a": 11}, None, "")] == ["a: Invalid value: 11: failed rule: self < 10"]
    assert count("apiserver_cel_compilation_duration_seconds") == compilations + 2      # one per node with rules
    assert count("apiserver_cel_evaluation_duration_seconds") == evaluations + 2        # one per object

    resp = await api.handle(Request.build("GET", "/metrics", "", {"authorization": "Bearer t"}))
    assert resp.status == 200 and isinstance(resp.body, bytes)
    families = {f.name: f for f in text_string_to_metric_families(resp.body.decode())}
    for name, help_ in (("apiserver_cel_compilation_duration_seconds", "[BETA] CEL compilation time in seconds."),
                        ("apiserver_cel_evaluation_duration_seconds", "[BETA] CEL evaluation time in seconds.")):
        f = families[name]
        assert (f.type, f.documentation) == ("histogram", help_)
        assert [s.labels["le"] for s in f.samples if s.name == f"{name}_bucket"] == UPSTREAM_BUCKETS


def test_observations_fall_in_upstreams_buckets() -> None:
    """Upstream: TestObserveCompilation / TestObserveEvaluation — 2 s lands in the 2.5 bucket."""
    apiserver_metrics.register()
    le = {b: REGISTRY.get_sample_value("apiserver_cel_evaluation_duration_seconds_bucket", {"le": b}) or 0.0
          for b in ("1.0", "2.5")}
    metrics.observe_evaluation(2.0)
    assert REGISTRY.get_sample_value("apiserver_cel_evaluation_duration_seconds_bucket", {"le": "1.0"}) == le["1.0"]
    assert REGISTRY.get_sample_value("apiserver_cel_evaluation_duration_seconds_bucket", {"le": "2.5"}) == \
        le["2.5"] + 1
