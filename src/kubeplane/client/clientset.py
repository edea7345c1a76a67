"""The clientset: typed clients per group-version, as client-go's kubernetes.Clientset.

    cs = Clientset(HTTPTransport.from_kubeconfig(path))      # or InProcessTransport(api)
    d = await cs.apps_v1().deployments("default").get("nginx")
    await cs.core_v1().pods("default").bind("web-1", "node-0")
"""
from __future__ import annotations

from typing import Any

from ..api.resources import lookup
from .rest import ResourceClient
from .transport import Transport


class GroupClient:
    """Resource accessors for one group-version: `.deployments(ns)`, `.nodes()` ..."""

    def __init__(self, transport: Transport, group: str, version: str) -> None:
        self.transport, self.group, self.version = transport, group, version

    def resource(self, plural: str, namespace: str = "") -> ResourceClient[Any]:
        ri = lookup(self.group, self.version, plural)
        if ri is None:
            raise KeyError(f"no resource {plural} in {self.group or 'core'}/{self.version}")
        return ResourceClient(self.transport, ri, namespace)

    def __getattr__(self, plural: str) -> Any:
        if plural.startswith("_"):
            raise AttributeError(plural)
        if lookup(self.group, self.version, plural) is None:
            raise AttributeError(plural)
        return lambda namespace="": self.resource(plural, namespace)


class Clientset:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def core_v1(self) -> GroupClient:
        return GroupClient(self.transport, "", "v1")

    def apps_v1(self) -> GroupClient:
        return GroupClient(self.transport, "apps", "v1")

    def coordination_v1(self) -> GroupClient:
        return GroupClient(self.transport, "coordination.k8s.io", "v1")

    def events_v1(self) -> GroupClient:
        return GroupClient(self.transport, "events.k8s.io", "v1")

    async def close(self) -> None:
        await self.transport.close()
