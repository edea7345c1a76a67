"""The e2e modules of this package run on a real etcd: one member with TLS for the package,
each `kubeplane up` under its own --etcd-prefix (issue 16: the API e2e tests and the kubectl
rollouts pass on etcd as on SQLite). Each module here imports the tests of a module of
tests/e2e and runs them unchanged; a Cluster that names no storage gets the etcd
(cluster.default_etcd)."""
from __future__ import annotations

import itertools
import pathlib
from typing import Iterator

import pytest

from kubeplane.testing.etcd import EtcdCluster, etcd_binary

from .. import cluster


@pytest.fixture(scope="package", autouse=True)
def on_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    if etcd_binary() is None:
        pytest.skip("no etcd binary (apt-get install etcd-server)")
    root = pathlib.Path(tmp_path_factory.mktemp("etcd"))
    numbers = itertools.count()
    with EtcdCluster(root) as etcd:
        cluster.default_etcd = lambda: etcd.config(prefix=f"/registry-e2e-{next(numbers)}")
        try:
            yield
        finally:
            cluster.default_etcd = None
