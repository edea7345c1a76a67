"""tests/e2e/test_deployment.py on etcd (see conftest.py)."""
from ..test_deployment import *  # noqa: F403
