"""tests/e2e/test_every_kind.py on etcd (see conftest.py)."""
from ..test_every_kind import *  # noqa: F403
