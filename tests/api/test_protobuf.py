"""Tests for kubeplane.api.protobuf: decoding kubectl's protobuf request bodies.

The fixtures in testdata/protobuf/*.pb are request bodies captured from the real kubectl 1.37
(`capture()` below records them; `python tests/api/test_protobuf.py` rewrites them). The expected
dicts are what `kubectl create ... --dry-run=client -o json` prints for the same command, i.e. the
Go object marshalled by encoding/json; the live test checks both sides again against kubectl.
"""
from __future__ import annotations

import base64
import http.server
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.errors import BadRequest
from kubeplane.api.protobuf import MAGIC, decode, definition_for, go_duration

TESTDATA = pathlib.Path(__file__).parent / "testdata" / "protobuf"
ROOT = pathlib.Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl", path=str(pathlib.Path(sys.executable).parent)) or shutil.which("kubectl")

# --- a minimal protobuf writer for hand-built bodies -------------------------------------------


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def vf(num: int, value: int) -> bytes:
    """Varint field."""
    return varint(num << 3) + varint(value)


def lf(num: int, payload: bytes | str) -> bytes:
    """Length-delimited field."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(num << 3 | 2) + varint(len(data)) + data


def body(api_version: str, kind: str, raw: bytes, *extra: bytes) -> bytes:
    return MAGIC + lf(1, lf(1, api_version) + lf(2, kind)) + lf(2, raw) + b"".join(extra)


def entry(key: str, value: bytes) -> bytes:
    return lf(1, key) + value


# --- captured kubectl bodies -------------------------------------------------------------------

COMMANDS = {
    "deployment-nginx-replicas0": ["create", "deployment", "nginx", "--image", "nginx", "--replicas", "0"],
    "deployment-web-port80": ["create", "deployment", "web", "--image", "nginx:1.25", "--replicas", "3",
                              "--port", "80"],
    "namespace-foo": ["create", "namespace", "foo"],
    "configmap-cm": ["create", "configmap", "cm", "--from-literal", "a=b"],
    "secret-s": ["create", "secret", "generic", "s", "--from-literal", "k=v"],
}


def deployment(name: str, image: str, replicas: int, container: dict | None = None) -> dict:
    labels = {"app": name}
    c = container or {"name": image.split(":")[0], "image": image, "resources": {}}
    return {
        "kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [c]}},
                 "strategy": {}},
        "status": {},
    }


EXPECTED = {
    # replicas 0 survives: DeploymentSpec.Replicas is *int32, so Go's JSON keeps an explicit zero.
    "deployment-nginx-replicas0": deployment("nginx", "nginx", 0),
    "deployment-web-port80": deployment("web", "nginx:1.25", 3, {
        "name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}], "resources": {}}),
    "namespace-foo": {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "foo"},
                      "spec": {}, "status": {}},
    "configmap-cm": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "cm"},
                     "data": {"a": "b"}},
    "secret-s": {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"},
                 "data": {"k": base64.b64encode(b"v").decode()}},
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_captured_kubectl_body_decodes_to_kubectl_json(name: str) -> None:
    assert decode((TESTDATA / f"{name}.pb").read_bytes()) == EXPECTED[name]


def test_captured_deployment_carries_zero_valued_wire_fields_that_are_dropped() -> None:
    # The capture really contains empty non-pointer strings (generateName `12 00`) and a zero
    # replicas varint (`08 00`); only the pointer one survives.
    raw = (TESTDATA / "deployment-nginx-replicas0.pb").read_bytes()
    assert bytes.fromhex("0a056e67696e78" "1200") in raw
    assert bytes.fromhex("0800") in raw
    assert "generateName" not in decode(raw)["metadata"]


class _CaptureHandler(http.server.BaseHTTPRequestHandler):
    """Legacy discovery for the four kinds, and POSTs echoed back (protobuf in, protobuf out)."""

    resources: ClassVar[dict[str, list[tuple[str, str, bool]]]] = {
        "v1": [("namespaces", "Namespace", False), ("configmaps", "ConfigMap", True),
               ("secrets", "Secret", True)],
        "apps/v1": [("deployments", "Deployment", True)],
    }
    bodies: list[bytes]

    def log_message(self, *args: object) -> None:
        pass

    def _discovery(self, path: str) -> dict | None:
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            gv = {"groupVersion": "apps/v1", "version": "v1"}
            return {"kind": "APIGroupList", "apiVersion": "v1",
                    "groups": [{"name": "apps", "versions": [gv], "preferredVersion": gv}]}
        gv = path.removeprefix("/api/").removeprefix("/apis/")
        if gv not in self.resources:
            return None
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": [
            {"name": p, "singularName": k.lower(), "namespaced": ns, "kind": k, "verbs": ["create", "get"]}
            for p, k, ns in self.resources[gv]]}

    def do_GET(self) -> None:  # noqa: N802
        doc = self._discovery(self.path.split("?")[0])
        self._reply(200 if doc else 404, "application/json", json.dumps(doc).encode())

    def do_POST(self) -> None:  # noqa: N802
        data = self.rfile.read(int(self.headers["Content-Length"]))
        self.bodies.append(data)
        self._reply(201, self.headers["Content-Type"], data)

    def _reply(self, code: int, content_type: str, data: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def capture(args: list[str]) -> tuple[list[bytes], str]:
    """Run kubectl against a throwaway loopback server; return (POSTed bodies, stdout)."""
    handler = type("Handler", (_CaptureHandler,), {"bodies": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with tempfile.TemporaryDirectory() as home:
            kubeconfig = pathlib.Path(home, "kubeconfig")
            kubeconfig.write_text(
                "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{server.server_address[1]}'}}}}]\n"
                "users: [{name: u, user: {}}]\n"
                "contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]\n")
            env = {**os.environ, "HOME": home, "KUBECTL_KUBERC": "false"}
            run = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir",
                                  str(pathlib.Path(home, "cache")), *args],
                                 capture_output=True, text=True, env=env, timeout=60, check=True)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    return handler.bodies, run.stdout


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")
@pytest.mark.parametrize("name", ["deployment-nginx-replicas0", "secret-s"])
def test_live_kubectl_protobuf_matches_its_own_json(name: str) -> None:
    bodies, _ = capture(COMMANDS[name])
    _, printed = capture([*COMMANDS[name], "--dry-run=client", "-o", "json"])
    assert len(bodies) == 1 and bodies[0].startswith(MAGIC)
    assert decode(bodies[0]) == json.loads(printed) == EXPECTED[name]


# --- hand-built bodies: field kinds ---------------------------------------------------------------

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def test_pointer_zero_kept_and_plain_zero_dropped() -> None:
    spec = vf(1, 0) + vf(5, 0) + vf(7, 0) + vf(6, 0)   # replicas, minReadySeconds, paused, revisionHistoryLimit
    got = decode(body("apps/v1", "Deployment", lf(2, spec)))
    assert got["spec"] == {"replicas": 0, "revisionHistoryLimit": 0}


def test_non_omitempty_zero_kept() -> None:
    # ContainerPort.containerPort is `json:"containerPort"` (no omitempty): zero stays.
    container = lf(1, "c") + lf(6, vf(3, 0) + vf(2, 0))
    pod = lf(2, lf(2, container))
    got = decode(body("v1", "Pod", pod))
    assert got["spec"]["containers"] == [{"name": "c", "ports": [{"containerPort": 0}]}]


def test_negative_int32_and_int64() -> None:
    pod = lf(2, vf(4, -5) + vf(25, -1))    # terminationGracePeriodSeconds int64, priority int32
    assert decode(body("v1", "Pod", pod))["spec"] == {"terminationGracePeriodSeconds": -5, "priority": -1}


def test_inline_struct_fields_merge_into_parent() -> None:
    # Volume{name, VolumeSource `json:",inline"`}; ConfigMapVolumeSource inlines LocalObjectReference.
    cm_source = lf(1, lf(1, "settings")) + vf(3, 0o644)
    volume = lf(1, "conf") + lf(2, lf(19, cm_source))
    got = decode(body("v1", "Pod", lf(2, lf(1, volume))))
    assert got["spec"]["volumes"] == [{"name": "conf", "configMap": {"name": "settings", "defaultMode": 420}}]


def test_quantity_map_and_empty_message_kept() -> None:
    limits = lf(1, entry("cpu", lf(2, lf(1, "500m")))) + lf(1, entry("memory", lf(2, lf(1, "1Gi"))))
    container = lf(1, "c") + lf(8, limits)
    got = decode(body("v1", "Pod", lf(2, lf(2, container)) + lf(3, b"")))
    assert got["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m", "memory": "1Gi"}}
    assert got["status"] == {}


def test_int_or_string_both_forms() -> None:
    ru = lf(1, vf(1, 1) + lf(3, "25%")) + lf(2, vf(1, 0) + vf(2, 2))
    got = decode(body("apps/v1", "Deployment", lf(2, lf(4, lf(1, "RollingUpdate") + lf(2, ru)))))
    assert got["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 2}}


def test_time_and_micro_time() -> None:
    # 1700000000 = 2023-11-14T22:13:20Z; nanos 123456789 -> .123456 at microsecond precision.
    ts = vf(1, 1_700_000_000) + vf(2, 123_456_789)
    meta = lf(1, "e") + lf(8, ts)
    got = decode(body("events.k8s.io/v1", "Event", lf(1, meta) + lf(2, ts) + lf(4, "ctrl")))
    assert got["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert got["eventTime"] == "2023-11-14T22:13:20.123456Z"
    assert got["reportingController"] == "ctrl"


def test_zero_time_is_left_out() -> None:
    assert decode(body("v1", "Namespace", lf(1, lf(1, "x") + lf(8, b""))))["metadata"] == {"name": "x"}


def test_bytes_are_base64_and_string_maps() -> None:
    raw = lf(2, entry("bin", lf(2, b"\x00\xff"))) + lf(4, entry("plain", lf(2, "text"))) + lf(3, "Opaque")
    got = decode(body("v1", "Secret", raw))
    assert got == {"kind": "Secret", "apiVersion": "v1", "data": {"bin": "AP8="},
                   "stringData": {"plain": "text"}, "type": "Opaque"}


def test_map_entry_without_value_gets_zero_value() -> None:
    got = decode(body("v1", "ConfigMap", lf(1, lf(11, lf(1, "empty")))))
    assert got["metadata"]["labels"] == {"empty": ""}


def test_repeated_scalars_unpacked_and_packed() -> None:
    sc = vf(4, 1) + vf(4, 2) + lf(4, varint(3) + varint(4))   # supplementalGroups
    got = decode(body("v1", "Pod", lf(2, lf(14, sc))))
    assert got["spec"]["securityContext"] == {"supplementalGroups": [1, 2, 3, 4]}


def test_raw_extension_fields_v1_and_unknown_fields_skipped() -> None:
    mf = lf(1, "kubectl") + lf(7, lf(1, b'{"f:metadata":{}}'))
    meta = lf(1, "n") + lf(17, mf) + vf(99, 7)            # field 99 does not exist: ignored
    got = decode(body("v1", "ConfigMap", lf(1, meta)))
    assert got["metadata"] == {"name": "n", "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {}}}]}


def test_scale_and_delete_options() -> None:
    scale = decode(body("autoscaling/v1", "Scale", lf(1, lf(1, "web")) + lf(2, vf(1, 5))))
    assert scale["spec"] == {"replicas": 5}
    opts = decode(body("v1", "DeleteOptions", vf(1, 0) + lf(4, "Background")))
    assert opts == {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                    "propagationPolicy": "Background"}


@pytest.mark.parametrize(("ns", "text"), [
    (0, "0s"), (999, "999ns"), (1_500, "1.5µs"), (250_000_000, "250ms"), (1_500_000_000, "1.5s"),
    (120 * 10**9, "2m0s"), (3600 * 10**9, "1h0m0s"), (-61 * 10**9, "-1m1s"),
])
def test_go_duration(ns: int, text: str) -> None:
    assert go_duration(ns) == text


def test_definition_for_kinds() -> None:
    assert definition_for("apps/v1", "Deployment") == "io.k8s.api.apps.v1.Deployment"
    assert definition_for("v1", "Binding") == "io.k8s.api.core.v1.Binding"
    assert definition_for("coordination.k8s.io/v1", "Lease") == "io.k8s.api.coordination.v1.Lease"


# --- malformed input ---------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "message"), [
    (b'{"kind":"Pod"}', "magic"),
    (MAGIC, "no apiVersion/kind"),
    (MAGIC + b"\x0a", "varint"),
    (MAGIC + b"\x0a\x05ab", "runs past the end"),
    (MAGIC + b"\x0b", "wire type 3"),
    (body("apps/v1beta1", "Deployment", b""), "no kind 'Deployment' is registered"),
    (body("v1", "Frobnicator", b""), "no kind"),
    (body("v1", "Pod", b"", lf(3, "gzip")), "contentEncoding"),
    (body("v1", "Pod", vf(1, 5)), "wire type 0"),
    (body("v1", "Pod", lf(2, lf(1, b"\x00"))), "field number 0"),
    (body("v1", "Pod", lf(2, lf(1, b"\x0a\x05ab"))), "runs past the end"),
    (body("v1", "ConfigMap", lf(1, lf(17, lf(7, lf(1, b"{not json"))))), "not JSON"),
])
def test_malformed_bodies_are_bad_requests(data: bytes, message: str) -> None:
    with pytest.raises(BadRequest) as err:
        decode(data)
    assert err.value.code == 400 and message in str(err.value)


def test_deep_nesting_is_rejected_not_recursed(monkeypatch: pytest.MonkeyPatch) -> None:
    import kubeplane.api.protobuf as pb
    deep = body("apps/v1", "Deployment", lf(2, lf(3, lf(2, lf(2, lf(1, "c"))))))
    assert decode(deep)["spec"]["template"]["spec"]["containers"] == [{"name": "c"}]
    monkeypatch.setattr(pb, "MAX_DEPTH", 2)
    with pytest.raises(BadRequest, match="nesting deeper than 2"):
        decode(deep)


def test_unknown_fields_are_skipped_without_recursing() -> None:
    nested = b""
    for _ in range(500):
        nested = lf(1, nested)
    assert decode(body("v1", "Namespace", lf(50, nested)))["kind"] == "Namespace"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_arbitrary_bytes_after_magic(data: bytes) -> None:
    try:
        result = decode(MAGIC + data)
    except BadRequest:
        return
    assert isinstance(result, dict)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([("apps/v1", "Deployment"), ("v1", "Pod"), ("v1", "Secret"),
                        ("events.k8s.io/v1", "Event"), ("coordination.k8s.io/v1", "Lease")]),
       st.binary(max_size=300))
def test_fuzz_arbitrary_object_bytes(kind: tuple[str, str], raw: bytes) -> None:
    try:
        result = decode(body(*kind, raw))
    except BadRequest:
        return
    assert result["kind"] == kind[1]
    json.dumps(result)    # always JSON-serialisable


# --- the generated table -------------------------------------------------------------------------


def _generator():
    spec = importlib.util.spec_from_file_location("gen_protobuf", ROOT / "tools" / "gen_protobuf.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def test_generator_reads_proto_and_go_tags() -> None:
    gen = _generator()
    proto = """syntax = "proto2";
package k8s.io.api.demo.v1;
message Spec {
  // comment
  optional int32 replicas = 1;
  optional int32 minReadySeconds = 2;
  optional Inner inner = 3;
  map<string, .k8s.io.apimachinery.pkg.api.resource.Quantity> limits = 4;
  repeated string names = 5;
}
"""
    go = """package v1
type Spec struct {
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	Inner `json:",inline" protobuf:"bytes,3,opt,name=inner"`
}
"""
    msg = gen.parse_proto(proto)["io.k8s.api.demo.v1.Spec"]
    gen.apply_go_shape(msg, gen.parse_go_tags(go)["Spec"])
    assert {n: gen.entry(f) for n, f in msg.fields.items()} == {
        1: ["replicas", "int32", "k"], 2: ["minReadySeconds", "int32", ""],
        3: ["", "io.k8s.api.demo.v1.Inner", "i"],
        4: ["limits", "io.k8s.apimachinery.pkg.api.resource.Quantity", "m"], 5: ["names", "string", "r"]}


def test_table_names_match_json_schema() -> None:
    from kubeplane.api.schema import definitions
    table = json.loads((ROOT / "src/kubeplane/api/protobuf/fields.json").read_text())["messages"]
    defs = definitions()
    missing = [(name, f[0]) for name, fields in table.items() for f in fields.values()
               if f[0] and defs.get(name, {}).get("properties") and f[0] not in defs[name]["properties"]]
    assert missing == []
    # The .proto files (k8s.io/api 10b39a39, 2026-07-24) predate these 1.37.0 schema fields.
    older = {("io.k8s.api.core.v1.NodeSystemInfo", "runningInUserNamespace"),
             ("io.k8s.api.resource.v1.DeviceCounterConsumption", "compatibilityGroups"),
             ("io.k8s.api.resource.v1.DeviceSubRequest", "derivedAttributes"),
             ("io.k8s.api.resource.v1.ExactDeviceRequest", "derivedAttributes")}

    def json_names(name: str) -> set[str]:
        out: set[str] = set()
        for json_name, typ, flags in table[name].values():
            out |= json_names(typ) if "i" in flags else {json_name}
        return out
    absent = {(name, p) for name in table if defs.get(name, {}).get("properties")
              for p in set(defs[name]["properties"]) - json_names(name) - {"apiVersion", "kind"}}
    assert absent == older
    assert table["io.k8s.api.apps.v1.DeploymentSpec"]["1"] == ["replicas", "int32", "k"]
    assert table["io.k8s.api.core.v1.Volume"]["2"] == ["", "io.k8s.api.core.v1.VolumeSource", "i"]


if __name__ == "__main__":      # re-capture the fixtures from the installed kubectl
    for fixture, cmd in COMMANDS.items():
        (posted,), _ = capture(cmd)
        (TESTDATA / f"{fixture}.pb").write_bytes(posted)
        print(f"{fixture}.pb: {len(posted)} bytes")
