"""tests/e2e/test_replicaset.py on etcd (see conftest.py)."""
from ..test_replicaset import *  # noqa: F403
