# kopf's examples/08-events/example.py (https://github.com/nolar/kopf, 60d02aefb11c98cda6afab483f7953f6bb2ab9d6);
# Copyright (c) 2020-2025 Sergey Vasilyev, (c) 2019-2020 Zalando SE; MIT licence: ../README.md.
from typing import Any

import kopf


@kopf.on.event('kopfexamples')
def event_fn_with_error(**_: Any) -> None:
    raise Exception("Oops!")


@kopf.on.event('kopfexamples')
def normal_event_fn(event: kopf.RawEvent, **_: Any) -> None:
    print(f"Event received: {event!r}")


# Marks for the e2e tests (see tests/e2e/test_examples.py):
E2E_ALLOW_TRACEBACKS = True
E2E_SUCCESS_COUNTS = {'normal_event_fn': 2}
