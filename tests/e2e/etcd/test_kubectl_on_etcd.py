"""tests/e2e/test_kubectl.py on etcd (see conftest.py)."""
from ..test_kubectl import *  # noqa: F403
