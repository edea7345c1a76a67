"""tests/e2e/test_python_client.py on etcd (see conftest.py)."""
from ..test_python_client import *  # noqa: F403
