"""A Node answered as Go encodes it (api/zero_values.py): every NodeSystemInfo string, "" when unset."""
from __future__ import annotations

EMPTY_INFO = {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "",
              "containerRuntimeVersion": "", "kubeletVersion": "", "kubeProxyVersion": "",
              "operatingSystem": "", "architecture": ""}


async def test_api_answers_a_bare_node_with_every_field(api) -> None:
    r = await api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})
    assert r.status == 201
    assert r.json["status"]["nodeInfo"] == EMPTY_INFO
    r = await api.call("PATCH", "/api/v1/nodes/n/status", body={"status": {"nodeInfo": {"kubeletVersion": "v2"}}},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200 and r.json["status"]["nodeInfo"] == {**EMPTY_INFO, "kubeletVersion": "v2"}
