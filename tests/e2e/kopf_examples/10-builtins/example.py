# kopf's examples/10-builtins/example.py (https://github.com/nolar/kopf, 60d02aefb11c98cda6afab483f7953f6bb2ab9d6);
# Copyright (c) 2020-2025 Sergey Vasilyev, (c) 2019-2020 Zalando SE; MIT licence: ../README.md.
# ruff: noqa: F541, G004  (kept as kopf wrote it)
# Adapted: the child pod is made with the official kubernetes client instead of pykube-ng.
import asyncio
from typing import Any

import kopf
import kubernetes

tasks: dict[str, dict[str, asyncio.Task[None]]] = {}  # dict{namespace: dict{name: asyncio.Task}}


@kopf.on.resume('pods')
@kopf.on.create('pods')
async def pod_in_sight(namespace: str | None, name: str, logger: kopf.Logger, **_: Any) -> None:
    assert namespace is not None  # for type-checkers
    if namespace.startswith('kube-'):
        return
    else:
        task = asyncio.create_task(pod_killer(namespace, name, logger))
        tasks.setdefault(namespace, {})
        tasks[namespace][name] = task


@kopf.on.delete('pods')
async def pod_deleted(namespace: str | None, name: str, **_: Any) -> None:
    if namespace in tasks and name in tasks[namespace]:
        task = tasks[namespace][name]
        task.cancel()  # it will also remove from `tasks`


async def pod_killer(namespace: str | None, name: str, logger: kopf.Logger, timeout: float = 30) -> None:
    try:
        logger.info(f"=== Pod killing happens in {timeout}s.")
        await asyncio.sleep(timeout)
        logger.info(f"=== Pod killing happens NOW!")

        kubernetes.config.load_kube_config()  # KUBECONFIG
        api = kubernetes.client.CoreV1Api()
        api.delete_namespaced_pod(name, namespace)
        api.api_client.close()

    except asyncio.CancelledError:
        logger.info(f"=== Pod killing is cancelled!")

    finally:
        if namespace in tasks and name in tasks[namespace]:
            del tasks[namespace][name]
