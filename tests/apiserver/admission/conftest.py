"""Fixtures for the admission plugin tests: an API server on memory storage with no
controller-manager beside it (objects of kinds not served yet go straight into its storage)."""
from __future__ import annotations

from typing import AsyncIterator

import pytest

from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    s = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await s.bootstrap()
    yield s
    await s.storage.close()
