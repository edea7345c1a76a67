"""`kubeplane up` under the test suite runs with the cache mutation detector on (tests/conftest.py
sets KUBE_CACHE_MUTATION_DETECTOR; Cluster.cleanup fails the module if it found a mutation)."""
from __future__ import annotations

from .cluster import Cluster


def test_up_runs_with_the_cache_mutation_detector(cluster: Cluster) -> None:
    assert "Mutation detector is enabled" in cluster.log_path.read_text()
