# kopf's examples/13-hooks/example.py (https://github.com/nolar/kopf, 60d02aefb11c98cda6afab483f7953f6bb2ab9d6);
# Copyright (c) 2020-2025 Sergey Vasilyev, (c) 2019-2020 Zalando SE; MIT licence: ../README.md.
# ruff: noqa: B007, RUF006  (kept as kopf wrote it)
# Adapted: the login handler reads the kubeconfig with the official kubernetes client instead of pykube-ng.
import asyncio
import datetime
import random
from typing import Any

import kopf
import kubernetes

LOCK: asyncio.Lock  # requires a loop on creation
STOPPERS: dict[str, dict[str, asyncio.Event]] = {}  # [namespace][name]


@kopf.on.startup()
async def startup_fn_simple(logger: kopf.Logger, **_: Any) -> None:
    logger.info("Initialising the task-lock...")
    global LOCK
    LOCK = asyncio.Lock()  # in the current asyncio loop


@kopf.on.startup()
async def startup_fn_retried(retry: int, logger: kopf.Logger, **_: Any) -> None:
    if retry < 3:
        raise kopf.TemporaryError(f"Going to succeed in {3-retry}s", delay=1)
    else:
        logger.info("Starting retried...")
        # raise kopf.PermanentError("Unable to start!")


@kopf.on.cleanup()
async def cleanup_fn(logger: kopf.Logger, **_: Any) -> None:
    logger.info("Cleaning up...")
    for namespace in STOPPERS.keys():
        for name, flag in STOPPERS[namespace].items():
            flag.set()
    logger.info("All pod-tasks are requested to stop...")


@kopf.on.login(errors=kopf.ErrorsMode.PERMANENT)
async def login_fn(**_: Any) -> kopf.ConnectionInfo:
    print('Logging in in 2s...')
    await asyncio.sleep(2.0)

    # An equivalent of kopf.login_via_client(), but shrinked for demo purposes.
    config = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(client_configuration=config)  # KUBECONFIG
    return kopf.ConnectionInfo(
        server=config.host,
        ca_path=config.ssl_ca_cert,  # can be a temporary file
        insecure=not config.verify_ssl,
        username=config.username or None,
        password=config.password or None,
        token=config.api_key.get('authorization', '').removeprefix('Bearer ') or None,
        certificate_path=config.cert_file,  # can be a temporary file
        private_key_path=config.key_file,  # can be a temporary file
        expiration=datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=30),
    )


@kopf.on.probe()
async def tasks_count(**_: Any) -> int:
    return sum(len(flags) for flags in STOPPERS.values())


@kopf.on.probe()
async def monitored_objects(**_: Any) -> dict[str, list[str]]:
    return {namespace: sorted(name for name in STOPPERS[namespace]) for namespace in STOPPERS}


@kopf.on.event('pods')
async def pod_task(namespace: str | None, name: str, logger: kopf.Logger, **_: Any) -> None:
    assert namespace is not None  # for type-checkers
    async with LOCK:
        if namespace not in STOPPERS or name not in STOPPERS[namespace]:
            flag = asyncio.Event()
            STOPPERS.setdefault(namespace, {}).setdefault(name, flag)
            asyncio.create_task(_task_fn(logger, shouldstop=flag))


async def _task_fn(logger: kopf.Logger, shouldstop: asyncio.Event) -> None:
    while not shouldstop.is_set():
        await asyncio.sleep(random.randint(1, 10))
        logger.info("Served by the background task.")
    logger.info("Serving is finished by request.")


# Marks for the e2e tests (see tests/e2e/test_examples.py):
E2E_STARTUP_STOP_WORDS = ['Served by the background task.']
E2E_CLEANUP_STOP_WORDS = ['Hung tasks', 'Root tasks']
E2E_SUCCESS_COUNTS = {'startup_fn_simple': 1, 'startup_fn_retried': 1, 'cleanup_fn': 1}
