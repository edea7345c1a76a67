"""The pytest plugin (entry point pytest11 "kubeplane"): a control plane for the test session.

Fixtures (the control plane starts the first time a test asks for one, once per session):

    kubeplane              the ControlPlane (controlplane.py): apply(), create_namespace(), api...
    kubeplane_kubeconfig   pathlib.Path of its administrator kubeconfig
    kubeplane_namespace    a fresh namespace for the test (name str), deleted after it
    kubeplane_client       kubernetes.client.ApiClient (the official client) on the kubeconfig
    kubeplane_kr8s         kr8s.Api, when kr8s is installed (else the test is skipped)
    kubeplane_lightkube    lightkube.Client, when lightkube is installed (else skipped)
    kubeplane_kopf         runner(*args, **kw) -> kopf.testing.KopfRunner for `kopf run --standalone
                           *args` against the control plane (KUBECONFIG set for the test)

Configuration, in the ini file or on the command line (the command line wins):

    kubeplane_nodes = 1              --kubeplane-nodes N          simulated nodes
    kubeplane_controllers = true     --kubeplane-no-controllers   controller-manager and scheduler
    kubeplane_args =                 (ini only)                   more `kubeplane up` flags
    kubeplane_manifests =            --kubeplane-manifest PATH    applied at start, CRDs first
        deploy/crd.yaml                                           (paths relative to the rootdir)

Importing this module imports nothing of the control plane: the plugin costs nothing in a
session that asks for none of its fixtures.
"""
from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .controlplane import ControlPlane


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kubeplane", "a kubeplane control plane for the tests (kubeplane.testing)")
    group.addoption("--kubeplane-nodes", type=int, default=None, metavar="N",
                    help="simulated nodes of the session's control plane (default: ini kubeplane_nodes, 1)")
    group.addoption("--kubeplane-no-controllers", action="store_true", default=None,
                    help="run no controller-manager and scheduler (ini kubeplane_controllers = false)")
    group.addoption("--kubeplane-manifest", action="append", default=[], metavar="PATH",
                    help="a manifest file or directory to apply before the tests (repeatable; CRDs first)")
    parser.addini("kubeplane_nodes", "simulated nodes of the session's control plane", default="1")
    parser.addini("kubeplane_controllers", "run the controller-manager and scheduler", type="bool", default=True)
    parser.addini("kubeplane_args", "more `kubeplane up` flags for the session's control plane", type="args",
                  default=[])
    parser.addini("kubeplane_manifests", "manifest files or directories to apply before the tests (CRDs first)",
                  type="linelist", default=[])


def control_plane_options(config: pytest.Config) -> dict[str, Any]:
    """ControlPlane's keyword arguments and the manifests, from the ini file and the command line."""
    nodes = config.getoption("kubeplane_nodes")
    no_controllers = config.getoption("kubeplane_no_controllers")
    root = pathlib.Path(config.rootpath)
    manifests = [root / p for p in config.getini("kubeplane_manifests")]
    manifests += [pathlib.Path(p) for p in config.getoption("kubeplane_manifest")]
    args = config.getini("kubeplane_args")
    return {"nodes": int(config.getini("kubeplane_nodes")) if nodes is None else nodes,
            "controllers": bool(config.getini("kubeplane_controllers")) and not no_controllers,
            "args": list(args),
            "manifests": manifests}


@pytest.fixture(scope="session")
def kubeplane(pytestconfig: pytest.Config) -> Iterator[ControlPlane]:
    """The session's control plane, started on first use and stopped at the end of the session."""
    from .controlplane import ControlPlane
    options = control_plane_options(pytestconfig)
    manifests = options.pop("manifests")
    with ControlPlane(**options) as cp:
        if manifests:
            cp.apply(*manifests)
        yield cp


@pytest.fixture(scope="session")
def kubeplane_kubeconfig(kubeplane: ControlPlane) -> pathlib.Path:
    return kubeplane.kubeconfig


@pytest.fixture
def kubeplane_namespace(kubeplane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace named after the test (plus a random suffix), deleted when the test ends."""
    name = kubeplane.create_namespace(prefix=f"test-{request.node.name}")
    yield name
    kubeplane.delete_namespace(name)


@pytest.fixture(scope="session")
def kubeplane_client(kubeplane: ControlPlane) -> Iterator[Any]:
    pytest.importorskip("kubernetes")
    client = kubeplane.kubernetes_client()
    yield client
    client.close()


@pytest.fixture(scope="session")
def kubeplane_kr8s(kubeplane_kubeconfig: pathlib.Path) -> Any:
    kr8s = pytest.importorskip("kr8s")
    return kr8s.api(kubeconfig=str(kubeplane_kubeconfig))


@pytest.fixture(scope="session")
def kubeplane_lightkube(kubeplane_kubeconfig: pathlib.Path) -> Any:
    lightkube = pytest.importorskip("lightkube")
    return lightkube.Client(config=lightkube.KubeConfig.from_file(kubeplane_kubeconfig))


@pytest.fixture
def kubeplane_kopf(kubeplane_kubeconfig: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """runner(*args, registry=None, **kwargs): a kopf.testing.KopfRunner running `kopf run
    --standalone *args` (e.g. "--namespace", ns, "operator.py") against the control plane.

    Unless a registry is given, each run gets a fresh one, so it loads its handlers anew, with
    kopf's kubeconfig login in it (a new registry has none of the default one's logins).
    KUBECONFIG points at the control plane for the whole test: that login reads it, and so can
    the operator's own client (the kubernetes package reads the variable only when imported:
    name it, kubernetes.config.load_kube_config(config_file=os.environ.get("KUBECONFIG")))."""
    kopf = pytest.importorskip("kopf")
    kopf_testing = pytest.importorskip("kopf.testing")
    monkeypatch.setenv("KUBECONFIG", str(kubeplane_kubeconfig))

    def runner(*args: str, registry: Any = None, **kwargs: Any) -> Any:
        if registry is None:
            registry = kopf.OperatorRegistry()
            kopf.on.login(registry=registry)(kopf.login_with_kubeconfig)
        return kopf_testing.KopfRunner(["run", "--standalone", *args], registry=registry, **kwargs)
    return runner
