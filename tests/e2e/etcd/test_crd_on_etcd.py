"""tests/e2e/test_crd.py on etcd (see conftest.py)."""
from ..test_crd import *  # noqa: F403
