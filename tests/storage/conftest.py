"""Fixtures: every contract test runs against each backend."""
from __future__ import annotations

import pathlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

try:
    import kubeplane  # noqa: F401
except ImportError:     # the package is not installed in the venv: test from the source tree
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "src"))

from kubeplane.storage import BACKENDS, Storage, new_storage

MakeStore = Callable[..., Awaitable[Storage]]


@pytest.fixture(params=BACKENDS)
async def make_store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[MakeStore]:
    """A factory of stores of one backend (history bounds as given); all are closed afterwards."""
    opened: list[Storage] = []

    async def make(*, history: int = 1000, **bounds: int) -> Storage:
        s = new_storage(request.param, tmp_path / f"data{len(opened)}", history=history, **bounds)
        opened.append(s)
        return s

    yield make
    for s in opened:
        await s.close()


@pytest.fixture
async def store(make_store: MakeStore) -> Storage:
    return await make_store()
