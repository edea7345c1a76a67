"""Fixtures: every contract test runs against each backend."""
from __future__ import annotations

import pathlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest

try:
    import kubeplane  # noqa: F401
except ImportError:     # the package is not installed in the venv: test from the source tree
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "src"))

from kubeplane.storage import BACKENDS, Storage, new_storage
from kubeplane.testing.etcd import EtcdCluster, etcd_binary

MakeStore = Callable[..., Awaitable[Storage]]


@pytest.fixture(scope="session")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    """One real etcd member (TLS) for the session's etcd stores, each under its own prefix."""
    if etcd_binary() is None:
        pytest.skip("no etcd binary (apt-get install etcd-server)")
    with EtcdCluster(tmp_path_factory.mktemp("etcd")) as cluster:
        yield cluster


@pytest.fixture(params=[*BACKENDS, "etcd"])
async def make_store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[MakeStore]:
    """A factory of stores of one backend (history bounds as given); all are closed afterwards.
    etcd stores of one test share a prefix of their own: a second store is the same data."""
    opened: list[Storage] = []
    etcd = None
    if request.param == "etcd":
        cluster = request.getfixturevalue("etcd_cluster")
        etcd = cluster.config(prefix=f"/{tmp_path.name}/registry")

    async def make(*, history: int = 1000, **bounds: int) -> Storage:
        s = new_storage(request.param, tmp_path / f"data{len(opened)}", history=history, etcd=etcd, **bounds)
        await s.start()
        opened.append(s)
        return s

    yield make
    for s in opened:
        await s.close()


@pytest.fixture
async def store(make_store: MakeStore) -> Storage:
    return await make_store()
