# kopf's examples/05-handlers/example.py (https://github.com/nolar/kopf, 60d02aefb11c98cda6afab483f7953f6bb2ab9d6);
# Copyright (c) 2020-2025 Sergey Vasilyev, (c) 2019-2020 Zalando SE; MIT licence: ../README.md.
# ruff: noqa: F541  (kept as kopf wrote it)
from typing import Any

import kopf


@kopf.on.resume('kopfexamples')
def resume_fn_1(**_: Any) -> None:
    print(f'RESUMED 1st')


@kopf.on.create('kopfexamples')
def create_fn_1(**_: Any) -> None:
    print('CREATED 1st')


@kopf.on.resume('kopfexamples')
def resume_fn_2(**_: Any) -> None:
    print(f'RESUMED 2nd')


@kopf.on.create('kopfexamples')
def create_fn_2(**_: Any) -> None:
    print('CREATED 2nd')


@kopf.on.update('kopfexamples')
def update_fn(old: Any, new: Any, diff: kopf.Diff, **_: Any) -> None:
    print('UPDATED')


@kopf.on.delete('kopfexamples')
def delete_fn_1(**_: Any) -> None:
    print('DELETED 1st')


@kopf.on.delete('kopfexamples')
def delete_fn_2(**_: Any) -> None:
    print('DELETED 2nd')


@kopf.on.field('kopfexamples', field='spec.field')
def field_fn(old: Any, new: Any, **_: Any) -> None:
    print(f'FIELD CHANGED: {old} -> {new}')
