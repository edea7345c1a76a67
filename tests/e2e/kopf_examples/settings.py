"""Loaded with each example (`kopf run --standalone settings.py example.py`): the settings kopf's
own e2e test gives its runner (tests/e2e/test_examples.py: `settings.execution.default_backoff =
1`, `settings.watching.server_timeout = 10`), here from a startup handler, as an operator's
author would set them for a `kopf run` process."""
from typing import Any

import kopf


@kopf.on.startup()
def e2e_settings(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.execution.default_backoff = 1       # no lengthy sleeps on the simulated retries
    settings.watching.server_timeout = 10        # no lengthy watch requests when the process exits
