from __future__ import annotations

from typing import Iterator

import pytest

from .cluster import Cluster, running


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """One `kubeplane up --nodes 0` per test module (tests use their own namespaces or names)."""
    yield from running()
