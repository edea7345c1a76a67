"""Suite-wide: the cache mutation detector is on (client/tools/cache/mutation_detector.py).

Every informer a test builds keeps the bytes of what it delivers, and a test fails if anything
modified one of those objects; the `kubeplane up` processes the e2e tests start inherit the
variable and exit naming the object (tests/e2e/cluster.py reports it). KUBE_CACHE_MUTATION_DETECTOR
=false in the environment turns it off, to measure without it.
"""
from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import Iterator

import pytest

os.environ.setdefault("KUBE_CACHE_MUTATION_DETECTOR", "true")

from kubeplane.client.tools.cache import mutation_detector  # after the variable is set

# kubeplane.testing's pytest plugin comes with the installed package (entry point pytest11); a
# checkout run against an environment installed from an older tree loads it from here instead.
pytest_plugins = ["pytester"]
if not entry_points(group="pytest11", name="kubeplane"):
    pytest_plugins.append("kubeplane.testing.plugin")

_found: list[str] = []
# Record, never exit: an informer left running by one test may find a mutation during another.
mutation_detector.failure_func = _found.append


@pytest.fixture(autouse=True)
def cache_mutation_detector() -> Iterator[None]:
    """Fail the test if an informer's object was modified during it (checked as it ends)."""
    yield
    found = _found + mutation_detector.check_all()
    _found.clear()
    if found:
        pytest.fail("an informer's cached object was modified (copy before changing it):\n" + "\n".join(found),
                    pytrace=False)
