"""`kubectl api-resources -o wide` and `kubectl api-versions` against a default cluster equal a
default 1.37 kube-apiserver's (upstream_resources.json, every row of which is on by default in
1.37: the decisions table in kubeplane/apiserver/resourceconfig.py), and --runtime-config /
--feature-gates change both as they change upstream's."""
from __future__ import annotations

from typing import Iterator

import pytest

from kubeplane.api import upstream_resources as upstream

from .cluster import Cluster

# Upstream resources kubeplane has no definition for yet (asserted exactly, so serving one
# makes this test say so): none since CustomResourceDefinitions are served.
NOT_YET_SERVED: set[tuple[str, str, str]] = set()

# What a cluster with metrics-server (kind + its manifest) adds: the aggregated metrics.k8s.io,
# which no --runtime-config turns off.
METRICS_ROWS = [("nodes", "", "metrics.k8s.io/v1beta1", "false", "NodeMetrics", "get,list", ""),
                ("pods", "", "metrics.k8s.io/v1beta1", "true", "PodMetrics", "get,list", "")]

COLUMNS = ("NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES")


def expected_rows(leave_out: frozenset[tuple[str, str, str]] | set[tuple[str, str, str]] = frozenset()) -> list[tuple[str, ...]]:
    """kubectl's rows for upstream's table: the preferred version of each group, sorted by group then
    name (kubectl's sortableResource with no --sort-by)."""
    preferred = {g: vs[0] for g, vs in upstream.group_versions()}
    rows = []
    for r in upstream.resources():
        key = (r.group, r.version, r.resource)
        if r.version != preferred[r.group] or key in NOT_YET_SERVED or key in leave_out:
            continue
        rows.append((r.resource, ",".join(r.short_names), r.api_version, str(r.namespaced).lower(), r.kind,
                     ",".join(r.verbs), ",".join(r.categories)))
    rows += METRICS_ROWS
    return sorted(rows, key=lambda row: (row[2].rpartition("/")[0], row[0]))


def expected_versions(leave_out: frozenset[str] = frozenset()) -> list[str]:
    served = {(r.group, r.version) for r in upstream.resources()
              if (r.group, r.version, r.resource) not in NOT_YET_SERVED}
    gvs = [f"{g}/{v}" if g else v for g, vs in upstream.group_versions() for v in vs if (g, v) in served]
    return sorted([gv for gv in gvs if gv not in leave_out] + ["metrics.k8s.io/v1beta1"])


def api_resources(cluster: Cluster) -> list[tuple[str, ...]]:
    """Parse the table by the header's column offsets (kubectl pads with spaces; cells may be empty)."""
    lines = cluster.kubectl("api-resources", "-o", "wide").stdout.splitlines()
    header = lines[0]
    starts = [header.index(c) for c in COLUMNS]
    bounds = list(zip(starts, starts[1:] + [None]))
    return [tuple(line[a:b].strip() for a, b in bounds) for line in lines[1:]]


def api_versions(cluster: Cluster) -> list[str]:
    return cluster.kubectl("api-versions").stdout.split()


@pytest.fixture(scope="module")
def default_cluster(cluster: Cluster) -> Cluster:
    return cluster


def test_api_resources_equal_a_default_1_37_server(default_cluster: Cluster) -> None:
    got = api_resources(default_cluster)
    assert got == expected_rows()
    assert len(got) == 73          # upstream: 71 (72 rows, HPA once: autoscaling/v2 is preferred), less
    # NOT_YET_SERVED, and metrics-server's 2


def test_api_versions_equal_a_default_1_37_server(default_cluster: Cluster) -> None:
    assert api_versions(default_cluster) == expected_versions()


def test_every_listed_resource_answers_list(default_cluster: Cluster) -> None:
    listable = [row[0] + "." + row[2].split("/")[0] if "/" in row[2] else row[0]
                for row in expected_rows() if "list" in row[5]]
    res = default_cluster.kubectl("get", ",".join(listable), "-A", "--ignore-not-found", "-o", "name")
    assert res.returncode == 0


@pytest.fixture(scope="module")
def configured() -> Iterator[Cluster]:
    """api/ga=false then the core group and apps/v1 back on, one resource of batch/v1 back on,
    and a feature gate off: the switches upstream has, at once."""
    c = Cluster(extra_args=("--runtime-config", "api/ga=false,v1=true,apps/v1=true",
                            "--runtime-config", "batch/v1/jobs=true,apps/v1/daemonsets=false",
                            "--feature-gates", "ClusterTrustBundle=false")).start()
    try:
        yield c
    finally:
        c.cleanup()


def test_runtime_config_enables_and_disables_as_upstream(configured: Cluster) -> None:
    served = {("", "v1"), ("apps", "v1")}
    keep = {(g, v, p) for g, v, p in [(r.group, r.version, r.resource) for r in upstream.resources()]
            if (g, v) in served and (g, v, p) != ("apps", "v1", "daemonsets")} | {("batch", "v1", "jobs")}
    leave_out = {(r.group, r.version, r.resource) for r in upstream.resources()} - keep
    assert api_resources(configured) == expected_rows(leave_out)
    assert api_versions(configured) == ["apps/v1", "batch/v1", "metrics.k8s.io/v1beta1", "v1"]


def test_turned_off_resources_are_not_found(configured: Cluster) -> None:
    res = configured.kubectl("get", "cronjobs", check=False)
    assert res.returncode == 1 and 'the server doesn\'t have a resource type "cronjobs"' in res.stderr
    raw = configured.kubectl("get", "--raw", "/apis/batch/v1/cronjobs", check=False)
    assert raw.returncode == 1 and "NotFound" in raw.stderr
    raw = configured.kubectl("get", "--raw", "/apis/certificates.k8s.io/v1/clustertrustbundles", check=False)
    assert raw.returncode == 1 and "NotFound" in raw.stderr
    index = configured.kubectl("get", "--raw", "/openapi/v3").stdout
    assert '"apis/batch/v1"' in index and '"apis/networking.k8s.io/v1"' not in index
    v2 = configured.kubectl("get", "--raw", "/openapi/v2").stdout
    assert "/apis/batch/v1/cronjobs" not in v2 and "/apis/batch/v1/jobs" in v2


def test_served_resources_still_work(configured: Cluster) -> None:
    configured.kubectl("create", "namespace", "rc")
    configured.kubectl("create", "job", "j", "--image=busybox", "-n", "rc")
    configured.kubectl("create", "deployment", "d", "--image=nginx", "--replicas=2", "-n", "rc")
    assert configured.get_json("jobs", "-n", "rc")["items"][0]["metadata"]["name"] == "j"
    from .cluster import eventually
    eventually(lambda: len(configured.get_json("pods", "-n", "rc", "-l", "app=d")["items"]) == 2,
               "the deployment's pods (controllers run with batch/v1 partly off)")
    configured.kubectl("delete", "namespace", "rc", "--wait=false")
    eventually(lambda: configured.kubectl("get", "namespace", "rc", check=False).returncode == 1,
               "the namespace deleted (its deleter skips what is not served)")


def test_bad_runtime_config_is_refused_with_upstreams_message(tmp_path) -> None:
    c = Cluster(tmp_path / "bad", extra_args=("--runtime-config", "apps/v2=true"))
    with pytest.raises(RuntimeError) as e:
        c.start()
    c.cleanup()
    assert "group version apps/v2 that has not been registered" in str(e.value)
