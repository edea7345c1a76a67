"""The pytest plugin (entry point pytest11 "kubeplane"): a control plane for the test session.

Fixtures (the control plane starts the first time a test asks for one, once per session):

    kubeplane              the control plane (cluster.py): kubeconfig, apply(), create_namespace()...
    kubeplane_kubeconfig   pathlib.Path of its administrator kubeconfig
    kubeplane_namespace    a fresh namespace for the test (name str), deleted after it
    kubeplane_client       kubernetes.client.ApiClient (the official client) on the kubeconfig
    kubeplane_kr8s         kr8s.Api, when kr8s is installed (else the test is skipped)
    kubeplane_lightkube    lightkube.Client, when lightkube is installed (else skipped)
    kubeplane_kopf         runner(*args, **kw) -> kopf.testing.KopfRunner for `kopf run --standalone
                           *args` against the control plane (KUBECONFIG set for the test)

Configuration, in the ini file or on the command line (the command line wins):

    kubeplane_mode = inprocess       --kubeplane-mode MODE        inprocess: `kubeplane up` in the
                                                                  test process (ControlPlane);
                                                                  process: as a child process
                                                                  (ProcessControlPlane)
    kubeplane_kubeconfig =           --kubeplane-kubeconfig PATH  use the cluster this kubeconfig
                                                                  names instead (ExistingCluster;
                                                                  mode "existing"); fresh
                                                                  namespaces are still made
    kubeplane_nodes = 1              --kubeplane-nodes N          simulated nodes
    kubeplane_controllers = true     --kubeplane-no-controllers   controller-manager and scheduler
    kubeplane_args =                 (ini only)                   more `kubeplane up` flags
    kubeplane_manifests =            --kubeplane-manifest PATH    applied at start, CRDs first
        deploy/crd.yaml                                           (paths relative to the rootdir)

nodes and args configure the control plane the session starts; with an existing cluster they
are not used, and `controllers = false` says its namespaces get no "default" ServiceAccount.

Importing this module imports nothing of the control plane: the plugin costs nothing in a
session that asks for none of its fixtures.
"""
from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .cluster import ClusterClient

MODES = ("inprocess", "process", "existing")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kubeplane", "a kubeplane control plane for the tests (kubeplane.testing)")
    group.addoption("--kubeplane-mode", choices=MODES, default=None,
                    help="how the session's control plane runs: inprocess (default), process (a child "
                         "process) or existing (--kubeplane-kubeconfig's cluster) (ini kubeplane_mode)")
    group.addoption("--kubeplane-kubeconfig", default=None, metavar="PATH",
                    help="test against the cluster of this kubeconfig instead of starting one "
                         "(ini kubeplane_kubeconfig)")
    group.addoption("--kubeplane-nodes", type=int, default=None, metavar="N",
                    help="simulated nodes of the session's control plane (default: ini kubeplane_nodes, 1)")
    group.addoption("--kubeplane-no-controllers", action="store_true", default=None,
                    help="run no controller-manager and scheduler (ini kubeplane_controllers = false)")
    group.addoption("--kubeplane-manifest", action="append", default=[], metavar="PATH",
                    help="a manifest file or directory to apply before the tests (repeatable; CRDs first)")
    parser.addini("kubeplane_mode", "how the session's control plane runs: inprocess, process or existing",
                  default="")
    parser.addini("kubeplane_kubeconfig", "the kubeconfig of an existing cluster to test against (relative to "
                  "the rootdir)", default="")
    parser.addini("kubeplane_nodes", "simulated nodes of the session's control plane", default="1")
    parser.addini("kubeplane_controllers", "run the controller-manager and scheduler", type="bool", default=True)
    parser.addini("kubeplane_args", "more `kubeplane up` flags for the session's control plane", type="args",
                  default=[])
    parser.addini("kubeplane_manifests", "manifest files or directories to apply before the tests (CRDs first)",
                  type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    control_plane_options(config)          # a bad mode is a usage error at once, not in a test's setup


def control_plane_options(config: pytest.Config) -> dict[str, Any]:
    """The mode, the control plane's keyword arguments and the manifests, from the ini file and
    the command line (pytest.UsageError for a bad combination)."""
    nodes = config.getoption("kubeplane_nodes")
    no_controllers = config.getoption("kubeplane_no_controllers")
    root = pathlib.Path(config.rootpath)
    manifests = [root / p for p in config.getini("kubeplane_manifests")]
    manifests += [pathlib.Path(p) for p in config.getoption("kubeplane_manifest")]
    args = config.getini("kubeplane_args")
    # the command line wins: its mode, else its kubeconfig (mode existing), else the ini's the same way
    kubeconfig_cli = config.getoption("kubeplane_kubeconfig")
    kubeconfig_ini = str(root / config.getini("kubeplane_kubeconfig")) if config.getini("kubeplane_kubeconfig") else None
    mode = config.getoption("kubeplane_mode") or ("existing" if kubeconfig_cli else None) or \
        config.getini("kubeplane_mode") or ("existing" if kubeconfig_ini else "inprocess")
    if mode not in MODES:
        raise pytest.UsageError(f"kubeplane_mode = {mode}: not one of {', '.join(MODES)}")
    kubeconfig = (kubeconfig_cli or kubeconfig_ini) if mode == "existing" else None
    if mode == "existing" and kubeconfig is None:
        raise pytest.UsageError("kubeplane: mode existing needs the cluster's kubeconfig "
                                "(--kubeplane-kubeconfig PATH, or ini kubeplane_kubeconfig)")
    if mode != "existing" and kubeconfig_cli:
        raise pytest.UsageError(f"kubeplane: --kubeplane-kubeconfig names an existing cluster, not one to run "
                                f"in mode {mode}")
    return {"mode": mode, "kubeconfig": kubeconfig,
            "nodes": int(config.getini("kubeplane_nodes")) if nodes is None else nodes,
            "controllers": bool(config.getini("kubeplane_controllers")) and not no_controllers,
            "args": list(args),
            "manifests": manifests}


def start_control_plane(mode: str, kubeconfig: str | None, **options: Any) -> ClusterClient:
    """The session's control plane for a mode (control_plane_options), started."""
    if mode == "existing":
        from .cluster import ExistingCluster
        assert kubeconfig is not None
        return ExistingCluster(kubeconfig, controllers=options["controllers"]).start()
    if mode == "process":
        from .cluster import ProcessControlPlane
        return ProcessControlPlane(**options).start()
    from .controlplane import ControlPlane
    return ControlPlane(**options).start()


@pytest.fixture(scope="session")
def kubeplane(pytestconfig: pytest.Config) -> Iterator[ClusterClient]:
    """The session's control plane, started on first use and stopped at the end of the session
    (an existing cluster is left running)."""
    options = control_plane_options(pytestconfig)
    manifests = options.pop("manifests")
    cp = start_control_plane(**options)
    try:
        if manifests:
            cp.apply(*manifests)
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def kubeplane_kubeconfig(kubeplane: ClusterClient) -> pathlib.Path:
    return kubeplane.kubeconfig


@pytest.fixture
def kubeplane_namespace(kubeplane: ClusterClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace named after the test (plus a random suffix), deleted when the test ends."""
    name = kubeplane.create_namespace(prefix=f"test-{request.node.name}")
    yield name
    kubeplane.delete_namespace(name)


@pytest.fixture(scope="session")
def kubeplane_client(kubeplane: ClusterClient) -> Iterator[Any]:
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
