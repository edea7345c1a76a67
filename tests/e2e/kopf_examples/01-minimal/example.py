# kopf's examples/01-minimal/example.py (https://github.com/nolar/kopf, 60d02aefb11c98cda6afab483f7953f6bb2ab9d6);
# Copyright (c) 2020-2025 Sergey Vasilyev, (c) 2019-2020 Zalando SE; MIT licence: ../README.md.
from typing import Any

import kopf


@kopf.on.create('kopfexamples')
def create_fn(spec: kopf.Spec, **_: Any) -> Any:
    print(f"And here we are! Creating: {spec}")
    return {'message': 'hello world'}  # will be the new status
