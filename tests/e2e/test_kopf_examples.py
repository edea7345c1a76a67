"""kopf's own examples, run as their users run them, against `kubeplane up` (issue 13: "kopf's own
examples that use its example CRD ... run with `kopf run --standalone` against `kubeplane up` and
behave as on a real cluster").

The examples are kopf's (https://github.com/nolar/kopf, examples/, MIT licence: see
kopf_examples/README.md), each run by the real `kopf run --standalone --verbose example.py` in a
process of its own, with kopf's example CRD and object (crd.yaml, obj.yaml) applied and deleted by
the real kubectl. The tests assert what kopf's own e2e test asserts (tests/e2e/test_examples.py
test_all_examples_are_runnable, steered by the E2E_* marks each example carries, read here with
`ast` as kopf reads them with astpath), what the examples' own tests assert (09, 10, 11), and what
each example does to the cluster: its status patched, finalizers added and removed, children made
and collected, events posted, timers and daemons firing, webhooks called.

Where kopf's test sleeps a fixed time or "until a stop word or the time limit", these wait for the
log line they then assert (so an example takes the time it needs). Each example runs in a
namespace of its own (`--namespace`; kopf's test uses `--all-namespaces` and "default"), so one
cluster serves them all.
"""
from __future__ import annotations

import ast
import collections
import json
import os
import pathlib
import re
import signal
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .cluster import BIN, Cluster, eventually, namespace_for_test, running

pytest.importorskip("kopf")

EXAMPLES = pathlib.Path(__file__).parent / "kopf_examples"
CRD, OBJ, SETTINGS = EXAMPLES / "crd.yaml", EXAMPLES / "obj.yaml", EXAMPLES / "settings.py"
PEERING = EXAMPLES / "peering.yaml"
KOPF = str(BIN / "kopf")
NAME = "kopf-example-1"                    # obj.yaml's


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """One cluster for all the examples: a node, so that the pods some of them make run."""
    yield from running(nodes=1, storage="memory")


@pytest.fixture(scope="module", autouse=True)
def kopfexamples_crd(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", str(CRD))
    cluster.kubectl("wait", "--for=condition=Established", "crd/kopfexamples.kopf.dev", "--timeout=20s")


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> str:
    return namespace_for_test(cluster, request.node.name)


class Operator:
    """`kopf run --standalone --verbose --namespace NS settings.py *paths` in a process of its own
    (KUBECONFIG: the cluster's), its log (stdout and stderr) in a file; `options` replace
    --standalone (e.g. ["--dev"]: peering, with priority 666)."""

    def __init__(self, cluster: Cluster, namespace: str, *paths: pathlib.Path, log: pathlib.Path,
                 env: dict[str, str] | None = None, options: tuple[str, ...] = ("--standalone",)) -> None:
        self.namespace = namespace
        self.log = log
        self.error: AssertionError | None = None          # what went wrong while `started` set it up
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [KOPF, "run", *options, "--verbose", "--namespace", namespace, str(SETTINGS), *map(str, paths)],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig), **(env or {})})

    def __enter__(self) -> Operator:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:            # a test that failed midway: no process left behind
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, *patterns: str, timeout: float = 30) -> str:
        """The first log line matching all patterns (regular expressions); fails if the process exits."""
        def found() -> str | None:
            for line in self.output.splitlines():
                if all(re.search(p, line) for p in patterns):
                    return line
            assert self.proc.poll() is None, f"kopf exited ({self.proc.returncode}):\n{self.output[-5000:]}"
            return None
        try:
            return eventually(found, f"kopf to log {patterns}", timeout=timeout)
        except AssertionError as err:
            raise AssertionError(f"{err}\n--- kopf's log:\n{self.output[-5000:]}") from None

    def ready(self) -> None:
        """Watching its namespace: the startup handlers have run and the resources are found."""
        self.wait_for(f"Starting the watch-stream for .* in '{self.namespace}'")

    def stop(self) -> int:
        """SIGTERM, as a pod's operator gets; its exit code once it has stopped."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


class E2E:
    """An example's E2E_* marks and handlers, as kopf's test reads them (E2EParser), with ast."""

    def __init__(self, path: pathlib.Path) -> None:
        tree = ast.parse(path.read_text())
        self.configs: dict[str, Any] = {}
        self.decorators: list[ast.Call] = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id.startswith("E2E_"):
                        self.configs[t.id] = ast.literal_eval(node.value)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.decorators += [d for d in node.decorator_list if isinstance(d, ast.Call)]

    def get(self, mark: str) -> Any:
        return self.configs.get(f"E2E_{mark}")

    def has_handler(self, name: str) -> bool:
        return any(ast.unparse(d.func) in (f"kopf.on.{name}", f"kopf.{name}") for d in self.decorators)

    @property
    def has_changing_handlers(self) -> bool:
        return any(self.has_handler(name) for name in ("create", "update", "delete"))

    @property
    def has_mandatory_on_delete(self) -> bool:
        optional = [ast.literal_eval(k.value) for d in self.decorators if ast.unparse(d.func) == "kopf.on.delete"
                    for k in d.keywords if k.arg == "optional"]
        return self.has_handler("delete") and not any(optional)


def kex(cluster: Cluster, ns: str) -> dict[str, Any]:
    return cluster.get_json("-n", ns, "kopfexample", NAME)


def assert_as_kopf_does(e2e: E2E, output: str, ns: str, success_counts: dict[str, int] | None = None) -> None:
    """test_all_examples_are_runnable's assertions on the log (its namespace: ns, not "default")."""
    obj = f"[{ns}/{NAME}]"
    if e2e.has_mandatory_on_delete:
        assert f"{obj} Adding the finalizer" in output
    if e2e.has_handler("create"):
        assert f"{obj} Creation is in progress:" in output
    if e2e.has_mandatory_on_delete:
        assert f"{obj} Deletion is in progress:" in output
    if e2e.has_changing_handlers:
        assert f"{obj} Deleted, really deleted" in output
    if not e2e.get("ALLOW_TRACEBACKS"):
        assert "Traceback (most recent call last):" not in output

    # once a handler succeeds, it is never executed again; once it fails, neither
    succeeded = collections.Counter(re.findall(r"'(.+?)' succeeded", output))
    expected = e2e.get("SUCCESS_COUNTS") if success_counts is None else success_counts
    if expected is not None:
        assert {k: v for k, v in succeeded.items() if k in expected} == expected
    else:
        assert set(succeeded.values()) == {1}, succeeded
    failed = collections.Counter(re.findall(r"'(.+?)' failed (?:permanently|with an exception and will stop)", output))
    expected = e2e.get("FAILURE_COUNTS")
    if expected is not None:
        assert {k: v for k, v in failed.items() if k in expected} == expected
    else:
        assert not failed, failed


# -- what each example does to the cluster, checked while it runs (after its creation is handled) --

def minimal(cluster: Cluster, ns: str, op: Operator) -> None:
    assert kex(cluster, ns)["status"]["create_fn"] == {"message": "hello world"}
    # the CRD's printer columns (no Age: it has columns of its own) show the handler's result, and
    # nothing where the path finds nothing (no children)
    table = cluster.kubectl("get", "-n", ns, "kex", NAME).stdout.splitlines()
    assert [line.split() for line in table] == [["NAME", "DURATION", "CHILDREN", "MESSAGE"],
                                                [NAME, "1m", "hello", "world"]]


def children(cluster: Cluster, ns: str, op: Operator) -> None:
    owner = kex(cluster, ns)
    [pod] = cluster.get_json("-n", ns, "pods")["items"]
    assert owner["status"]["create_fn"] == {"children": [pod["metadata"]["uid"]]}
    assert [(r["kind"], r["name"], r["uid"], r.get("controller")) for r in pod["metadata"]["ownerReferences"]] == \
        [("KopfExample", NAME, owner["metadata"]["uid"], True)]
    assert pod["spec"]["containers"][0]["env"] == [{"name": "FIELD", "value": "value"}]
    # a list in a string printer column is printed as JSON (Upstream: JSONPath.PrintResults)
    row = cluster.kubectl("get", "-n", ns, "kex", NAME, "--no-headers").stdout.split()
    assert row == [NAME, "1m", f'["{pod["metadata"]["uid"]}"]']


def events(cluster: Cluster, ns: str, op: Operator) -> None:
    def posted() -> list[tuple[str, str, str]] | None:
        items = cluster.get_json("-n", ns, "events", "--field-selector", f"involvedObject.name={NAME}")["items"]
        got = sorted((e["type"], e["reason"], e["message"]) for e in items if e["reason"] == "SomeReason")
        return got if len(got) == 4 else None
    assert eventually(posted, "the example's events") == [
        ("Error", "SomeReason", "Some exception: Exception text."), ("Normal", "SomeReason", "Some message"),
        ("SomeType", "SomeReason", "Some message"), ("Warning", "SomeReason", "Some message")]


def handlers(cluster: Cluster, ns: str, op: Operator) -> None:
    assert kex(cluster, ns)["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]
    cluster.kubectl("patch", "-n", ns, "kex", NAME, "--type=merge", "-p", '{"spec": {"field": "changed"}}')
    op.wait_for("FIELD CHANGED: value -> changed")
    op.wait_for(f"\\[{ns}/{NAME}\\] Updating is processed: 2 succeeded; 0 failed.")
    # resumed handlers run only for objects found at start (none here)
    assert "RESUMED" not in op.output


def subhandlers(cluster: Cluster, ns: str, op: Operator) -> None:
    assert "=== Handling creation for item1. ===" in op.output
    assert "=== Handling creation for item2. ===" in op.output
    assert "Handler 'create_fn/item1' succeeded." in op.output


def daemons(cluster: Cluster, ns: str, op: Operator) -> None:
    op.wait_for("=> Ping from a sync daemon: field='value', retry=3")
    op.wait_for("=> Ping from an async daemon: field='value'")
    op.wait_for(re.escape("Merge-patching the status with: {'status': {'message': 'Failed 3 times.'}}"))
    # the sync daemon ends by itself 30 s after its start (`started` may have begun it that long ago)
    assert kex(cluster, ns)["status"]["message"] in ("Failed 3 times.", "Accompanying is finished.")


def timers(cluster: Cluster, ns: str, op: Operator) -> None:
    eventually(lambda: op.output.count("Ping from a sync timer: field='value'") >= 2, "the timer's next tick")


def indexing(cluster: Cluster, ns: str, op: Operator) -> None:
    status = eventually(lambda: kex(cluster, ns).get("status"), "the timer's status")
    assert status["running-pods"] == []           # the example lists kube-system's and default's only


WHILE_RUNNING: dict[str, Callable[[Cluster, str, Operator], None]] = {
    "01-minimal": minimal, "02-children": children, "04-events": events, "05-handlers": handlers,
    "07-subhandlers": subhandlers, "14-daemons": daemons, "15-timers": timers, "16-indexing": indexing,
}


def children_collected(cluster: Cluster, ns: str) -> None:
    """The garbage collector deletes the pod with its owner, a custom object (background cascade)."""
    eventually(lambda: not cluster.get_json("-n", ns, "pods")["items"], "the child pod collected")


AFTER_DELETION: dict[str, Callable[[Cluster, str], None]] = {"02-children": children_collected}
# What shows the creation handled, where kopf's test has no stop word (it sleeps 3 s instead).
CREATED = {
    "08-events": [r"Event received: \{'type': 'ADDED'"],
    "13-hooks": ["Starting retried..."],
    "15-timers": ["Ping from a sync timer: field='value'"],  # idle=5
    "16-indexing": ["Timer 'intervalled' succeeded."],
}
# Kept from kopf's deletion stop words: any one of them.
DELETED = {
    "08-events": [r"Event received: \{'type': 'DELETED'"],
}

# Where these tests do more than kopf's (an update, timers let tick), handlers run more often.
SUCCESS_COUNTS = {
    "05-handlers": {"create_fn_1": 1, "create_fn_2": 1, "update_fn": 1, "field_fn/spec.field": 2,
                    "delete_fn_1": 1, "delete_fn_2": 1},
    "15-timers": {},          # a timer succeeds on each tick
}
GENERIC = ["01-minimal", "02-children", "03-exceptions", "04-events", "05-handlers", "06-peering",
           "07-subhandlers", "08-events", "13-hooks", "14-daemons", "15-timers", "16-indexing", "99-all-at-once"]


@pytest.fixture(scope="module")
def started(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Operator]]:
    """Every example's operator started, and once it watches, its object created, all at once, each
    in a namespace of its own: their startup retries, idle timers and daemons' backoffs run side
    by side, and each test_example finds its example under way (kopf's test runs them one by
    one: a minute more here). What fails here fails that example's test."""
    runs = {example: Operator(cluster, namespace_for_test(cluster, f"kopf-{example}"),
                              EXAMPLES / example / "example.py", log=tmp_path_factory.mktemp(example) / "kopf.log")
            for example in GENERIC}
    try:
        for op in runs.values():
            try:
                op.ready()
                cluster.kubectl("apply", "-n", op.namespace, "-f", str(OBJ))
            except AssertionError as err:
                op.error = err
        yield runs
    finally:
        for op in runs.values():
            op.__exit__()


@pytest.mark.parametrize("example", GENERIC)
def test_example(cluster: Cluster, started: dict[str, Operator], example: str) -> None:
    """kopf's test_all_examples_are_runnable: start, create obj.yaml (both in `started`), delete it, stop."""
    op = started[example]
    if op.error is not None:
        raise op.error
    e2e = E2E(EXAMPLES / example / "example.py")
    ns = op.namespace
    obj = re.escape(f"[{ns}/{NAME}]")
    if example in CREATED or e2e.get("CREATION_STOP_WORDS"):
        op.wait_for("|".join(CREATED.get(example) or map(re.escape, e2e.get("CREATION_STOP_WORDS"))))
    elif e2e.has_handler("create"):
        op.wait_for(f"{obj} Creation is processed:")
    if example in WHILE_RUNNING:
        WHILE_RUNNING[example](cluster, ns, op)

    cluster.kubectl("delete", "-n", ns, "-f", str(OBJ))           # waits for the finalizer's removal
    if example in DELETED or e2e.get("DELETION_STOP_WORDS"):
        op.wait_for("|".join(DELETED.get(example) or map(re.escape, e2e.get("DELETION_STOP_WORDS"))))
    if e2e.has_changing_handlers:
        op.wait_for(f"{obj} Deleted, really deleted")
    if example in AFTER_DELETION:
        AFTER_DELETION[example](cluster, ns)
    exit_code = op.stop()

    assert exit_code == 0, op.output[-5000:]
    assert_as_kopf_does(e2e, op.output, ns, SUCCESS_COUNTS.get(example))


def test_12_embedded_is_not_run() -> None:
    pytest.skip("kopf's own e2e test skips it too (examples/12-embedded/test_nothing.py): an embedded "
                "operator is tested by the application that embeds it")


def test_09_testing(cluster: Cluster, ns: str, tmp_path: pathlib.Path) -> None:
    """examples/09-testing/test_example_09.py: the handler's log line is the object's."""
    obj = f"[{ns}/{NAME}]"
    with Operator(cluster, ns, EXAMPLES / "09-testing" / "example.py", log=tmp_path / "kopf.log") as op:
        op.ready()
        cluster.kubectl("create", "-n", ns, "-f", str(OBJ))
        op.wait_for(re.escape(f"{obj} Something was logged here."))
        cluster.kubectl("delete", "-n", ns, "-f", str(OBJ))
        exit_code = op.stop()
    assert exit_code == 0, op.output[-5000:]
    assert f"{obj} Creation is in progress:" in op.output
    assert f"{obj} Something was logged here." in op.output


POD = """\
apiVersion: v1
kind: Pod
metadata: {generateName: kopf-pod-}
spec:
  containers:
  - {name: the-only-one, image: busybox, command: ["sh", "-x", "-c", "sleep 1"]}
"""


def test_10_builtins(cluster: Cluster, ns: str, tmp_path: pathlib.Path) -> None:
    """examples/10-builtins/test_example_10.py: handlers on pods, a built-in kind, with kopf's finalizer."""
    with Operator(cluster, ns, EXAMPLES / "10-builtins" / "example.py", log=tmp_path / "kopf.log") as op:
        op.ready()
        name = cluster.kubectl("create", "-n", ns, "-f", "-", "-o", "name", input=POD).stdout.strip().split("/")[1]
        obj = f"[{ns}/{name}]"
        op.wait_for(re.escape(f"{obj} === Pod killing happens in 30s."))
        assert cluster.get_json("-n", ns, "pod", name)["metadata"]["finalizers"] == \
            ["kopf.zalando.org/KopfFinalizerMarker"]
        cluster.kubectl("delete", "-n", ns, "pod", name)          # waits for kopf's finalizer to go
        op.wait_for(re.escape(f"{obj} === Pod killing is cancelled!"))
        exit_code = op.stop()
    assert exit_code == 0, op.output[-5000:]
    assert f"{obj} Creation is in progress:" in op.output
    assert f"{obj} Deletion is in progress:" in op.output


def test_11_filtering_handlers(cluster: Cluster, ns: str, tmp_path: pathlib.Path) -> None:
    """examples/11-filtering-handlers/test_example_11.py: label, annotation, field and callback filters."""
    obj = f"[{ns}/{NAME}]"
    with Operator(cluster, ns, EXAMPLES / "11-filtering-handlers" / "example.py", log=tmp_path / "kopf.log") as op:
        op.ready()
        cluster.kubectl("create", "-n", ns, "-f", str(OBJ))
        op.wait_for(re.escape(f"{obj} Creation is processed:"))
        op.wait_for(re.escape(f"{obj} Field daemon is satisfied."))
        cluster.kubectl("patch", "-n", ns, "-f", str(OBJ), "--type", "merge", "-p", '{"spec":{"field":"changed"}}')
        op.wait_for(re.escape(f"{obj} Field change is satisfied."))
        cluster.kubectl("delete", "-n", ns, "-f", str(OBJ))
        op.wait_for(re.escape(f"{obj} Deleted, really deleted"))
        exit_code = op.stop()
    assert exit_code == 0, op.output[-5000:]
    logged = {line for line in ["Label is matching.", "Label is present.", "Label is absent.", "Label callback matching.",
                                "Annotation is matching.", "Annotation is present.", "Annotation is absent.",
                                "Annotation callback mismatch.", "Filter satisfied.", "Filter not satisfied.",
                                "Field value is satisfied.", "Field value is not satisfied.",
                                "Field presence is satisfied.", "Field presence is not satisfied.",
                                "Field change is satisfied.", "Field daemon is satisfied."]
              if f"{obj} {line}" in op.output}
    assert logged == {"Label is matching.", "Label is present.", "Label is absent.", "Label callback matching.",
                      "Annotation is matching.", "Annotation is present.", "Annotation is absent.",
                      "Filter satisfied.", "Field value is satisfied.", "Field presence is satisfied.",
                      "Field change is satisfied.", "Field daemon is satisfied."}


def test_17_admission(cluster: Cluster, ns: str, tmp_path: pathlib.Path) -> None:
    """kopf's validating and mutating webhooks, which it registers itself (managed 'auto.kopf.dev'):
    the API server calls them over HTTPS, shows their warnings, applies their patches, refuses what
    they deny with their message and code; kopf removes them when it stops."""
    from kubeplane.testing.webhook_server import make_pki
    tls = tmp_path / "tls"
    tls.mkdir()
    for name, pem in zip(("ca.crt", "tls.crt", "tls.key"), make_pki(), strict=True):
        (tls / name).write_bytes(pem)
    with Operator(cluster, ns, EXAMPLES / "17-admission" / "example.py", log=tmp_path / "kopf.log",
                  env={"KOPF_E2E_TLS": str(tls)}) as op:
        op.wait_for("Reconfiguring the validating webhook auto.kopf.dev.")     # no watching: webhooks only
        op.wait_for("Reconfiguring the mutating webhook auto.kopf.dev.")
        created = cluster.kubectl("apply", "-n", ns, "-f", str(OBJ))
        assert "Warning: Also update status.field to match spec.field: 'value' != None" in created.stderr
        assert "Warning: SSL peer is not identified." in created.stderr
        assert kex(cluster, ns)["spec"]["injected"] == 123                   # mutate1's patch

        def patch(field: str, *args: str) -> subprocess.CompletedProcess[str]:
            return cluster.kubectl("patch", "-n", ns, "kex", NAME, "--type=merge", "-p",
                                   json.dumps({"spec": {"field": field}}), *args, check=False)
        denied = patch("wrong")
        assert denied.returncode == 1
        assert 'admission webhook "validate1.auto.kopf.dev" denied the request: Meh! ' \
               "I don't like it. Change the field." in denied.stderr
        denied = patch("not-allowed", "-v=6")           # kubectl logs the response's status code
        assert 'admission webhook "validate2.spec.field.auto.kopf.dev" denied the request: ' \
               "I'm too lazy anyway. Go away!" in denied.stderr
        assert '"code": 555' in denied.stderr and 'status="555 "' in denied.stderr      # the webhook's code
        assert kex(cluster, ns)["spec"]["field"] == "value"
        cluster.kubectl("delete", "-n", ns, "-f", str(OBJ))
        exit_code = op.stop()
    assert exit_code == 0, op.output[-5000:]
    for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
        assert not cluster.get_json(kind, "auto.kopf.dev").get("webhooks"), f"kopf left its {kind}"


def test_06_peering(cluster: Cluster, ns: str, tmp_path: pathlib.Path) -> None:
    """examples/06-peering/README.md, without --standalone: two operators find each other through a
    KopfPeering object (kopf's peering.yaml); the one started with --dev (priority 666) makes the
    other pause, handles the object alone, and when it stops (removing itself from the peering
    status with a merge patch's null), the other resumes."""
    # kubectl maps every object of a file before it applies any (as against any cluster): the
    # peerings find their kinds the second time
    cluster.kubectl("apply", "-f", str(PEERING), check=False)
    cluster.kubectl("wait", "--for=condition=Established", "crd/kopfpeerings.kopf.dev", "--timeout=20s")
    cluster.kubectl("apply", "-f", str(PEERING))
    cluster.kubectl("create", "-n", ns, "-f", "-", input="apiVersion: kopf.dev/v1\nkind: KopfPeering\n"
                                                         "metadata: {name: default}\n")
    example = EXAMPLES / "06-peering" / "example.py"
    with Operator(cluster, ns, example, log=tmp_path / "a.log", options=()) as a:
        a.ready()
        with Operator(cluster, ns, example, log=tmp_path / "b.log", options=("--dev",)) as b:
            b.ready()
            a.wait_for(r"Pausing operations in favour of \[<Peer \S+: priority=666,")
            peers = cluster.get_json("-n", ns, "kopfpeering", "default")["status"]
            assert sorted(p["priority"] for p in peers.values()) == [0, 666]
            cluster.kubectl("apply", "-n", ns, "-f", str(OBJ))
            b.wait_for(re.escape(f"[{ns}/{NAME}] Handler 'create_fn' succeeded."))
            assert b.stop() == 0
        a.wait_for("Resuming operations after the pause.")
        assert [p["priority"] for p in cluster.get_json("-n", ns, "kopfpeering", "default")["status"].values()] == [0]
        cluster.kubectl("delete", "-n", ns, "-f", str(OBJ))
        assert a.stop() == 0
    assert f"[{ns}/{NAME}] Handler 'create_fn'" not in a.output          # paused while the object came
    assert "Traceback (most recent call last):" not in a.output + b.output
