"""kubeplane.testing's other two modes: `kubeplane up` as a child process (ProcessControlPlane)
and a cluster that runs already (ExistingCluster), from plain Python and chosen by the pytest
plugin's options (--kubeplane-mode, --kubeplane-kubeconfig and their ini twins)."""
from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
from typing import Any

import pytest
import yaml

import kubeplane
from kubeplane.testing import ClusterClient, ExistingCluster, ProcessControlPlane, StartError

from ..e2e.cluster import KUBECTL, eventually
from .test_controlplane import CONFTEST, WIDGET_CRD, widget

kubernetes = pytest.importorskip("kubernetes")


def kubectl(kubeconfig: pathlib.Path, *args: str) -> str:
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          check=True, env={**os.environ, "KUBECTL_KUBERC": "false"}, timeout=60).stdout


def deleted(core: Any, ns: str) -> bool:
    """Being deleted (the namespace controller takes it after upstream's 5 s grace period), or gone."""
    try:
        return bool(core.read_namespace(ns).metadata.deletion_timestamp)
    except kubernetes.client.ApiException as err:
        return err.status == 404


def test_a_control_plane_as_a_child_process() -> None:
    with ProcessControlPlane(nodes=1) as cp:
        assert cp.proc is not None and cp.proc.poll() is None
        data_dir, pid, port = cp.data_dir, cp.proc.pid, int(cp.server.rsplit(":", 1)[1])
        assert pid != os.getpid() and "kubeplane is ready:" in cp.log.read_text()
        assert kubectl(cp.kubeconfig, "get", "nodes", "-o", "name").split() == ["node/kubeplane-node-0"]
        ns = cp.create_namespace(prefix="child")            # the controllers give it its service account
        applied = cp.apply(WIDGET_CRD, widget("w1"), namespace=ns)
        assert [o["kind"] for o in applied] == ["CustomResourceDefinition", "Widget"]
        assert applied[1]["spec"] == {"size": 1}            # defaulted by the CRD's schema
        client = cp.kubernetes_client()
        try:
            got = kubernetes.client.CustomObjectsApi(client).get_namespaced_custom_object(
                "testing.example.com", "v1", ns, "widgets", "w1")
            assert got["metadata"]["namespace"] == ns
        finally:
            client.close()
        cp.delete_namespace(ns)
        cp.delete_namespace(ns)                             # again: not an error
        proc = cp.proc
    assert proc.returncode == 0                             # SIGTERM: a clean stop
    assert not data_dir.exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


ORPHAN = """
import os, sys
from kubeplane.testing import ProcessControlPlane
cp = ProcessControlPlane(nodes=0, controllers=False, data_dir=sys.argv[1]).start()
print(cp.proc.pid, flush=True)
os._exit(0)                     # no stop(): as if the test process were killed
"""


def test_a_child_process_stops_when_the_test_process_ends_without_stopping_it(tmp_path: pathlib.Path) -> None:
    src = str(pathlib.Path(kubeplane.__file__).parents[1])
    out = subprocess.run([sys.executable, "-c", ORPHAN, str(tmp_path)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": src}, check=True).stdout
    pid = int(out.split()[-1])

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    eventually(gone, "the orphaned kubeplane up to stop")
    assert "Shutting down" in (tmp_path / "up.log").read_text()      # a graceful stop (SIGTERM)


def test_a_child_process_that_does_not_start_says_why() -> None:
    with pytest.raises(StartError, match=r"kubeplane up exited \(2\): .*unrecognized arguments: --no-such-flag"):
        ProcessControlPlane(args=["--no-such-flag"]).start()


def test_an_existing_cluster_is_used_and_left_running(kubeplane: ClusterClient, kubeplane_client: Any) -> None:
    core = kubernetes.client.CoreV1Api(kubeplane_client)
    with ExistingCluster(kubeplane.kubeconfig) as cluster:
        assert cluster.server == kubeplane.server
        ns = cluster.create_namespace(prefix="existing")
        assert core.read_namespaced_service_account("default", ns).metadata.name == "default"
        [cm] = cluster.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n", namespace=ns)
        assert core.read_namespaced_config_map("cm", ns).data == {"a": "b"} == cm["data"]
        cluster.delete_namespace(ns)
    assert core.read_namespace("default").metadata.name == "default"        # still serving
    assert deleted(core, ns)


def test_an_existing_cluster_that_cannot_be_reached_says_why(tmp_path: pathlib.Path,
                                                            kubeplane: ClusterClient) -> None:
    with pytest.raises(StartError, match=r"kubeconfig .*/absent: \[Errno 2\]"):
        ExistingCluster(tmp_path / "absent").start()
    with socket.socket() as s:                      # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = yaml.safe_load(kubeplane.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    (tmp_path / "closed").write_text(yaml.safe_dump(config))
    with pytest.raises(StartError, match=r"the cluster of .*/closed cannot be reached: Cannot connect to host"):
        ExistingCluster(tmp_path / "closed").start()


MODE_TEST = """
import os
import kubernetes

def test_mode(kubeplane, kubeplane_client, kubeplane_namespace):
    assert type(kubeplane).__name__ == os.environ["EXPECTED_MODE"]
    core = kubernetes.client.CoreV1Api(kubeplane_client)
    assert core.read_namespace(kubeplane_namespace).status.phase == "Active"
    assert core.read_namespaced_service_account("default", kubeplane_namespace)
    crd = kubernetes.client.ApiextensionsV1Api(kubeplane_client).read_custom_resource_definition(
        "widgets.testing.example.com")
    assert {c.type: c.status for c in crd.status.conditions}["Established"] == "True"
    with open("namespace", "w") as f:
        f.write(kubeplane_namespace)
"""


def run_session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ini: str, *args: str,
                expected: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    (pytester.path / "crd.yaml").write_text(WIDGET_CRD)
    pytester.makeini("[pytest]\nkubeplane_manifests = crd.yaml\n" + ini)
    pytester.makepyfile(MODE_TEST)
    src = str(pathlib.Path(kubeplane.__file__).parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH", "")])))
    monkeypatch.setenv("EXPECTED_MODE", expected)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=120)


@pytest.mark.parametrize("ini, args, mode, kubeconfig", [
    ("", (), "inprocess", None),
    ("kubeplane_mode = process\n", (), "process", None),
    ("kubeplane_mode = process\n", ("--kubeplane-mode", "inprocess"), "inprocess", None),
    ("kubeplane_kubeconfig = config\n", (), "existing", "config"),                # relative to the rootdir
    ("kubeplane_kubeconfig = config\n", ("--kubeplane-mode", "process"), "process", None),
    ("kubeplane_mode = process\n", ("--kubeplane-kubeconfig", "/elsewhere"), "existing", "/elsewhere"),
])
def test_the_mode_comes_from_the_ini_file_or_the_command_line(pytester: pytest.Pytester, ini: str,
                                                               args: tuple[str, ...], mode: str,
                                                               kubeconfig: str | None) -> None:
    """The command line wins: its mode, else its kubeconfig (mode existing), else the ini's."""
    from kubeplane.testing.plugin import control_plane_options
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\n" + ini)
    options = control_plane_options(pytester.parseconfig(*args))
    expected = str(pytester.path / kubeconfig) if kubeconfig == "config" else kubeconfig
    assert (options["mode"], options["kubeconfig"]) == (mode, expected)


def test_the_plugin_runs_a_child_process(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_session(pytester, monkeypatch, "kubeplane_nodes = 0\nkubeplane_mode = process\n",
                         expected="ProcessControlPlane")
    result.assert_outcomes(passed=1)


def test_the_plugin_uses_an_existing_cluster(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                             kubeplane: ClusterClient, kubeplane_client: Any) -> None:
    """The inner session tests against this session's control plane: the CRD applied to it, a
    fresh namespace made there and deleted after, the cluster left running."""
    (pytester.path / "config").write_bytes(kubeplane.kubeconfig.read_bytes())
    result = run_session(pytester, monkeypatch, "kubeplane_kubeconfig = config\n", expected="ExistingCluster")
    result.assert_outcomes(passed=1)
    ns = (pytester.path / "namespace").read_text()
    core = kubernetes.client.CoreV1Api(kubeplane_client)
    assert deleted(core, ns)
    assert core.read_namespace("default").status.phase == "Active"


@pytest.mark.parametrize("ini, args, message", [
    ("", ("--kubeplane-mode", "existing"), "mode existing needs the cluster's kubeconfig (--kubeplane-kubeconfig"),
    ("kubeplane_mode = existing\n", (), "mode existing needs the cluster's kubeconfig"),
    ("", ("--kubeplane-kubeconfig", "config", "--kubeplane-mode", "process"),
     "--kubeplane-kubeconfig names an existing cluster, not one to run in mode process"),
    ("kubeplane_mode = thread\n", (), "kubeplane_mode = thread: not one of inprocess, process, existing"),
])
def test_the_plugin_refuses_a_mode_that_does_not_fit(pytester: pytest.Pytester, ini: str, args: tuple[str, ...],
                                                     message: str) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\n" + ini)
    pytester.makepyfile("def test_it(kubeplane):\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)
    assert result.ret != 0
    assert message in str(result.stdout) + str(result.stderr)


def test_the_readme_documents_every_option() -> None:
    readme = (pathlib.Path(kubeplane.__file__).parents[2] / "README.md").read_text()
    for option in ("--kubeplane-mode", "--kubeplane-kubeconfig", "kubeplane_mode", "kubeplane_kubeconfig",
                   "ProcessControlPlane", "ExistingCluster"):
        assert option in readme, option

