"""The RBAC server tests' `api`: memory storage, --authorization-mode=RBAC, bootstrap policy."""
from __future__ import annotations

from typing import AsyncIterator

import pytest

from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage

from .helpers import RBAC_ONLY


@pytest.fixture
async def api() -> AsyncIterator[APIServer]:
    server = APIServer(new_storage("memory"), options=RBAC_ONLY)
    await server.bootstrap()
    yield server
    await server.storage.close()
