"""api.zero_values: what Go's JSON encoder always writes, filled in on write."""
from __future__ import annotations

import copy

from kubeplane.api import zero_values
from kubeplane.apiserver.registry.scheme import set_defaults, set_defaults_except_spec

EMPTY_INFO = {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "",
              "containerRuntimeVersion": "", "kubeletVersion": "", "kubeProxyVersion": "",
              "operatingSystem": "", "architecture": ""}


def test_bare_node_gets_upstreams_shape() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    set_defaults(node)
    assert node["spec"] == {}
    assert node["status"] == {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": EMPTY_INFO}


def test_reported_values_are_kept_and_missing_ones_filled() -> None:
    info = {**EMPTY_INFO, "kubeletVersion": "v1.37.0", "architecture": "arm64", "swap": {"capacity": 1}}
    del info["kubeProxyVersion"]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"podCIDR": "10.0.0.0/24"},
            "status": {"nodeInfo": info, "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}}
    set_defaults(node)
    assert node["status"]["nodeInfo"] == {**EMPTY_INFO, "kubeletVersion": "v1.37.0", "architecture": "arm64",
                                          "swap": {"capacity": 1}}
    assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert node["spec"] == {"podCIDR": "10.0.0.0/24"}


def test_status_write_fills_too_and_is_idempotent() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"unschedulable": True},
            "status": {"nodeInfo": {"kubeletVersion": "v"}}}
    set_defaults_except_spec(node)
    assert node["spec"] == {"unschedulable": True}
    assert node["status"]["nodeInfo"]["kubeProxyVersion"] == ""
    again = copy.deepcopy(node)
    zero_values.fill_node(again)
    assert again == node
