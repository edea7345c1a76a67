"""kubeplane.testing's control plane and pytest plugin, driven as their users drive them: the
plugin's fixtures (this session's control plane), a second ControlPlane from plain Python, and
a test suite of its own run by pytester."""
from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import kubeplane
from kubeplane.testing import ControlPlane
from kubeplane.testing.controlplane import StartError
from kubeplane.testing.manifests import ApplyError

from ..e2e.cluster import KUBECTL, eventually

kubernetes = pytest.importorskip("kubernetes")

WIDGET_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.testing.example.com
spec:
  group: testing.example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 1}
"""


def widget(name: str, **spec: Any) -> str:
    return f"apiVersion: testing.example.com/v1\nkind: Widget\nmetadata: {{name: {name}}}\nspec: {spec or {}}\n"


def test_the_kubeconfig_reaches_it_over_https_with_kubectl(kubeplane_kubeconfig: pathlib.Path) -> None:
    out = subprocess.run([KUBECTL, "--kubeconfig", str(kubeplane_kubeconfig), "get", "namespaces", "-o", "name"],
                         capture_output=True, text=True, check=True, env={**os.environ, "KUBECTL_KUBERC": "false"},
                         timeout=60).stdout
    assert "namespace/default" in out.split()
    assert kubeplane_kubeconfig.read_text().count("server: https://127.0.0.1:") == 1


def test_a_fresh_namespace_per_test(kubeplane_namespace: str, kubeplane_client: Any,
                                    request: pytest.FixtureRequest) -> None:
    assert kubeplane_namespace.startswith("test-test-a-fresh-namespace-per-test-")
    ns = kubernetes.client.CoreV1Api(kubeplane_client).read_namespace(kubeplane_namespace)
    assert ns.status.phase == "Active"
    # with the controllers running, pods can be created at once (its service account exists)
    assert kubernetes.client.CoreV1Api(kubeplane_client).read_namespaced_service_account(
        "default", kubeplane_namespace).metadata.name == "default"


def test_a_deleted_namespace_goes_with_what_it_holds(kubeplane: ControlPlane, kubeplane_client: Any) -> None:
    core = kubernetes.client.CoreV1Api(kubeplane_client)
    name = kubeplane.create_namespace(prefix="doomed")
    core.create_namespaced_config_map(name, {"metadata": {"name": "cm"}})
    kubeplane.delete_namespace(name)
    kubeplane.delete_namespace(name)                     # again, or absent: not an error
    eventually(lambda: name not in [n.metadata.name for n in core.list_namespace().items], "namespace deleted")
    kubeplane.delete_namespace(name)


def test_apply_makes_a_crd_served_and_its_objects_with_it(kubeplane: ControlPlane, kubeplane_namespace: str,
                                                          kubeplane_client: Any) -> None:
    crs = kubernetes.client.CustomObjectsApi(kubeplane_client)
    applied = kubeplane.apply(widget("w1", size=3) + "---\n" + WIDGET_CRD, namespace=kubeplane_namespace)
    assert [(o["kind"], o["metadata"]["name"]) for o in applied] == \
        [("CustomResourceDefinition", "widgets.testing.example.com"), ("Widget", "w1")]
    got = crs.get_namespaced_custom_object("testing.example.com", "v1", kubeplane_namespace, "widgets", "w1")
    assert got["spec"] == {"size": 3}
    kubeplane.apply({"apiVersion": "testing.example.com/v1", "kind": "Widget",
                     "metadata": {"name": "w2", "namespace": kubeplane_namespace}, "spec": {}})
    got = crs.get_namespaced_custom_object("testing.example.com", "v1", kubeplane_namespace, "widgets", "w2")
    assert got["spec"] == {"size": 1}                      # defaulted by the CRD's schema
    # applying the same again changes nothing (the first time, the CRD controller had written the
    # CRD's status since)
    again = kubeplane.apply(WIDGET_CRD, widget("w1", size=3), namespace=kubeplane_namespace)
    assert again[1]["metadata"]["resourceVersion"] == applied[1]["metadata"]["resourceVersion"]
    third = kubeplane.apply(WIDGET_CRD, widget("w1", size=3), namespace=kubeplane_namespace)
    assert [o["metadata"]["resourceVersion"] for o in third] == [o["metadata"]["resourceVersion"] for o in again]


def test_apply_reads_files_directories_and_lists(kubeplane: ControlPlane, kubeplane_namespace: str,
                                                 tmp_path: pathlib.Path) -> None:
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n")
    (tmp_path / "b.json").write_text('{"apiVersion": "v1", "kind": "List", "items": ['
                                     '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}]}')
    (tmp_path / "notes.txt").write_text("not a manifest")
    applied = kubeplane.apply(tmp_path, str(tmp_path / "a.yaml"), namespace=kubeplane_namespace)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in applied] == \
        [(kubeplane_namespace, "a"), (kubeplane_namespace, "b"), (kubeplane_namespace, "a")]


@pytest.mark.parametrize("manifest, message", [
    ("apiVersion: testing.example.com/v9\nkind: Widget\nmetadata: {name: x}\n",
     'Widget: no matches for kind "Widget" in version "testing.example.com/v9"'),
    ("apiVersion: v1\nkind: Gadget\nmetadata: {name: x}\n", 'Gadget: no matches for kind "Gadget" in version "v1"'),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name}\n",
     "ConfigMap Not_A_Name: ConfigMap \"Not_A_Name\" is invalid: metadata.name: Invalid value: \"Not_A_Name\""),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "ConfigMap: apply needs metadata.name"),
    ("- just\n- a list\n", "<text>: a document is not a Kubernetes object (no apiVersion and kind)"),
])
def test_apply_says_what_the_server_refused(kubeplane: ControlPlane, manifest: str, message: str) -> None:
    with pytest.raises(ApplyError) as err:
        kubeplane.apply(manifest)
    assert str(err.value).startswith(message)


def test_run_and_transport_reach_the_api_server_in_process(kubeplane: ControlPlane) -> None:
    async def get() -> int:
        return (await kubeplane.transport().request("GET", "/api/v1/namespaces/default")).status
    assert kubeplane.run(get()) == 200


def test_a_control_plane_from_plain_python(tmp_path: pathlib.Path) -> None:
    with ControlPlane(nodes=2, controllers=False) as cp:
        data_dir, port = cp.data_dir, int(cp.server.rsplit(":", 1)[1])
        client = cp.kubernetes_client()
        try:
            core = kubernetes.client.CoreV1Api(client)
            eventually(lambda: sorted(n.metadata.name for n in core.list_node().items) == ["kubeplane-node-0", "kubeplane-node-1"]
                       or None, "the simulated nodes registered")
            ns = cp.create_namespace("plain")     # no controllers: no service account to wait for
            assert core.read_namespace(ns).metadata.name == "plain"
        finally:
            client.close()
    assert not data_dir.exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_start_that_fails_says_why() -> None:
    with pytest.raises(StartError, match='for "--profile" flag'):
        ControlPlane(args=["--profile", "no-such-profile"]).start()
    with pytest.raises(ValueError, match="--nodes"):
        ControlPlane(args=["--nodes", "-1"]).start()


@pytest.mark.parametrize("fixture", ["kubeplane_kr8s", "kubeplane_lightkube"])
def test_the_optional_clients_list_namespaces(fixture: str, request: pytest.FixtureRequest) -> None:
    client = request.getfixturevalue(fixture)             # skipped when the library is not installed
    if fixture == "kubeplane_kr8s":
        names = [ns.name for ns in client.get("namespaces")]
    else:
        from lightkube.resources.core_v1 import Namespace
        names = [ns.metadata.name for ns in client.list(Namespace)]
    assert "default" in names


CONFTEST = """
from importlib.metadata import entry_points
if not entry_points(group="pytest11", name="kubeplane"):
    pytest_plugins = ["kubeplane.testing.plugin"]
"""


def test_the_plugin_is_configured_from_the_ini_file_and_the_command_line(pytester: pytest.Pytester,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(CONFTEST)
    (pytester.path / "crd.yaml").write_text(WIDGET_CRD)
    pytester.makeini("[pytest]\nkubeplane_nodes = 0\nkubeplane_manifests = crd.yaml\n"
                     "kubeplane_args = --authorization-mode AlwaysAllow\n")
    pytester.makepyfile(textwrap.dedent("""
        import kubernetes

        def test_configured(kubeplane, kubeplane_client, kubeplane_namespace):
            assert (kubeplane.nodes, kubeplane.controllers) == (0, False)
            assert "--authorization-mode" in kubeplane.args
            crd = kubernetes.client.ApiextensionsV1Api(kubeplane_client).read_custom_resource_definition(
                "widgets.testing.example.com")
            assert {c.type: c.status for c in crd.status.conditions}["Established"] == "True"
            assert kubernetes.client.CoreV1Api(kubeplane_client).list_node().items == []
            assert kubeplane_namespace.startswith("test-test-configured-")
    """))
    src = str(pathlib.Path(kubeplane.__file__).parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH", "")])))
    result = pytester.runpytest_subprocess("--kubeplane-no-controllers", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1)


def test_importing_the_plugin_loads_no_control_plane() -> None:
    code = ("import sys, kubeplane.testing.plugin; "
            "print(sorted(m for m in sys.modules if m.startswith('kubeplane.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(pathlib.Path(kubeplane.__file__).parents[1])}).stdout
    assert out.strip() == "['kubeplane.testing', 'kubeplane.testing.plugin']"
