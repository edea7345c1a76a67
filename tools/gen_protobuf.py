"""Generate src/kubeplane/api/protobuf/fields.json from upstream generated.proto and types.go files.

Usage: python tools/gen_protobuf.py DIR

DIR holds upstream files under their Go import paths, e.g.
  DIR/k8s.io/api/apps/v1/generated.proto            (message structure: field numbers and types)
  DIR/k8s.io/api/apps/v1/types.go                   (Go shape of the fields: pointer, omitempty, inline;
                                                     every types*.go is read: types_jsonschema.go)
  DIR/k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto ...
Excerpts are fine (the generator never needs comments or unrelated messages). The roots are every
kind of src/kubeplane/api/upstream_resources.json (what a default 1.37 server serves).

Last run from whole upstream files: k8s.io/api 10b39a39 (master, 2026-07-24, after v0.37.0-beta.0),
k8s.io/apimachinery eed236ce, k8s.io/apiextensions-apiserver 1aa2717a, k8s.io/kube-aggregator
232ca687 (every generated.proto and types*.go under their import paths).

Why types.go: go-to-protobuf writes every field as proto2 `optional`, so the .proto cannot tell a
`*int32` from an `int32`. Go's generated marshallers always write non-pointer scalars (an empty
`generateName` is on the wire as `12 00`) but pointer scalars only when set, and Go's JSON drops a
zero non-pointer field only when it is `omitempty`. So the decoder must know, per scalar field,
whether a zero value read from the wire survives into the JSON form. That is true exactly when the
Go field is a pointer or its json tag lacks `omitempty`; both are read from the struct tags in
types.go. Scalar fields that types.go does not list are taken to be non-pointer `omitempty` fields
(by far the common case), so a types.go excerpt only needs the exceptions and embedded structs.

Table format (compact, loaded once by the decoder):
  {"messages": {"io.k8s.api.apps.v1.DeploymentSpec": {"1": ["replicas", "int32", "k"], ...}}}
  entry = [json name, type, flags]; type is a proto scalar type or a message name; flags:
  r = repeated, m = map (key string, value of `type`), k = keep zero values, i = inline (embedded
  struct: its fields are merged into the parent, json name is "").
"""
from __future__ import annotations

import json
import pathlib
import re
import sys
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "src/kubeplane/api/protobuf/fields.json"

# Kinds whose bodies the API accepts besides the served resources (subresources and options).
EXTRA_ROOTS = (
    "io.k8s.api.autoscaling.v1.Scale",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.api.core.v1.Binding",
    "io.k8s.api.policy.v1.Eviction",
    "io.k8s.api.authentication.v1.TokenRequest",
)

SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
           "fixed32", "fixed64", "sfixed32", "sfixed64", "double", "float"}

_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)
_MESSAGE = re.compile(r"^message\s+(\w+)\s*\{(.*?)^\}", re.M | re.S)
_FIELD = re.compile(r"^\s*(optional|repeated|required)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;", re.M)
_MAP = re.compile(r"^\s*map<\s*(\w+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;", re.M)
_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{(.*?)^\}", re.M | re.S)
_GO_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?(\*?[\w.\[\]]+)\s+`([^`]*)`", re.M)
_TAG = re.compile(r'(\w+):"([^"]*)"')


@dataclass
class Field:
    number: int
    name: str           # json name: the proto name unless types.go's json tag says otherwise
    type: str           # scalar type or fully qualified definition name
    repeated: bool = False
    map: bool = False
    keep_zero: bool = False
    inline: bool = False


@dataclass
class Message:
    name: str
    fields: dict[int, Field] = field(default_factory=dict)


# Proto packages spell the Go module's dash as "_"; JSON-schema names keep the dash.
_MODULES = {"apiextensions_apiserver.": "apiextensions-apiserver.", "kube_aggregator.": "kube-aggregator."}


def definition_name(proto_name: str) -> str:
    """`k8s.io.api.apps.v1.Deployment` -> `io.k8s.api.apps.v1.Deployment` (JSON-schema naming);
    `k8s.io.kube_aggregator.pkg...` -> `io.k8s.kube-aggregator.pkg...`."""
    name = proto_name.lstrip(".")
    if not name.startswith("k8s.io."):
        return name
    rest = name[len("k8s.io."):]
    for proto, schema in _MODULES.items():
        if rest.startswith(proto):
            rest = schema + rest[len(proto):]
    return "io.k8s." + rest


def resolve_type(type_name: str, package: str) -> str:
    if type_name in SCALARS:
        return type_name
    if type_name.startswith("."):
        return definition_name(type_name)
    if "." in type_name:                      # old-style `k8s.io.x.Y` without the leading dot
        return definition_name(type_name)
    return definition_name(f"{package}.{type_name}")


def parse_proto(text: str) -> dict[str, Message]:
    """Read the messages of one generated.proto (top-level messages only, as go-to-protobuf writes)."""
    package = _PACKAGE.search(text).group(1)
    messages = {}
    for m in _MESSAGE.finditer(text):
        msg = Message(definition_name(f"{package}.{m.group(1)}"))
        body = re.sub(r"//.*", "", m.group(2))
        for label, typ, name, num in _FIELD.findall(body):
            msg.fields[int(num)] = Field(int(num), name, resolve_type(typ, package), label == "repeated")
        for _key, typ, name, num in _MAP.findall(body):
            msg.fields[int(num)] = Field(int(num), name, resolve_type(typ, package), map=True)
        messages[msg.name] = msg
    return messages


def parse_go_tags(text: str) -> dict[str, list[tuple[str, str, dict[str, str]]]]:
    """struct name -> [(Go field name, "" when embedded; Go type; tags)] for the field lines of a
    types.go (excerpt)."""
    out: dict[str, list[tuple[str, str, dict[str, str]]]] = {}
    for s in _STRUCT.finditer(text):
        lines = re.sub(r"//.*", "", s.group(2))
        out[s.group(1)] = [(name, gotype, dict(_TAG.findall(tags)))
                           for name, gotype, tags in _GO_FIELD.findall(lines)]
    return out


def apply_go_shape(msg: Message, go_fields: list[tuple[str, str, dict[str, str]]]) -> None:
    """Mark keep-zero and inline fields from the Go struct tags; the tags must agree with the proto.

    An embedded struct is inline when its json tag has no name: `json:",inline"`, or `json:""`
    as newer upstream types.go write it (encoding/json promotes the fields of both)."""
    for name, gotype, tags in go_fields:
        pb = tags.get("protobuf", "").split(",")
        if len(pb) < 2:
            continue
        number = int(pb[1])
        names = [p[5:] for p in pb if p.startswith("name=")]
        f = msg.fields.get(number)
        if f is None:
            print(f"warning: {msg.name}: types.go field {number} is not in the proto", file=sys.stderr)
            continue
        if names and names[0] != f.name:
            raise SystemExit(f"{msg.name}.{number}: proto name {f.name!r} != types.go name {names[0]!r}")
        json_opts = tags.get("json", "").split(",")
        if json_opts[0] and json_opts[0] != "-":
            f.name = json_opts[0]      # the proto name can differ (uID/uid, aPIGroup/apiGroup, ref/$ref)
        if json_opts[0] == "" and ("inline" in json_opts[1:] or not name):
            f.inline = True
        elif f.type in SCALARS:
            f.keep_zero = gotype.startswith("*") or "omitempty" not in json_opts[1:]


def load(directory: pathlib.Path) -> dict[str, Message]:
    messages: dict[str, Message] = {}
    for proto in sorted(directory.rglob("generated.proto")):
        messages.update(parse_proto(proto.read_text()))
    for types_go in sorted(directory.rglob("types*.go")):      # types.go, types_jsonschema.go
        package = "io.k8s." + ".".join(types_go.parent.relative_to(directory).parts[1:])
        for struct, go_fields in parse_go_tags(types_go.read_text()).items():
            msg = messages.get(f"{package}.{struct}")
            if msg is None:
                print(f"warning: no proto message for {package}.{struct}", file=sys.stderr)
                continue
            apply_go_shape(msg, go_fields)
    return messages


def roots() -> list[str]:
    """Every kind of upstream's 1.37 discovery table (what a default server serves, a superset of
    kubeplane.api.resources), its list, and the request bodies besides (EXTRA_ROOTS)."""
    table = json.loads((ROOT / "src/kubeplane/api/upstream_resources.json").read_text())
    kinds = [r["definition"] for r in table["resources"]]
    lists = [r["definition"] + "List" for r in table["resources"] if "list" in r["verbs"]]
    return kinds + lists + list(EXTRA_ROOTS)


def reachable(messages: dict[str, Message], start: list[str]) -> list[str]:
    """Every message reachable from `start`; a missing message is an error (incomplete DIR)."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in messages:
            raise SystemExit(f"message {name} is referenced but not defined in DIR")
        seen.add(name)
        todo += [f.type for f in messages[name].fields.values() if f.type not in SCALARS]
    return sorted(seen)


def entry(f: Field) -> list[str]:
    flags = "".join(c for c, on in (("r", f.repeated), ("m", f.map), ("k", f.keep_zero),
                                     ("i", f.inline)) if on)
    return ["" if f.inline else f.name, f.type, flags]


def check_against_schema(messages: dict[str, Message], names: list[str]) -> int:
    """Warn where a json name is not a property of the JSON-schema definition (catches typos)."""
    from kubeplane.api.schema import definitions  # noqa: PLC0415
    defs, problems = definitions(), 0
    for name in names:
        props = defs.get(name, {}).get("properties")
        if not props:
            continue
        for f in messages[name].fields.values():
            if not f.inline and f.name not in props:
                problems += 1
                print(f"warning: {name}.{f.name} (field {f.number}) is not in the JSON schema",
                      file=sys.stderr)
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    messages = load(pathlib.Path(argv[1]))
    names = reachable(messages, roots())
    check_against_schema(messages, names)
    table = {"messages": {n: {str(k): entry(f) for k, f in sorted(messages[n].fields.items())}
                          for n in names}}
    OUT.write_text(json.dumps(table, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(names)} messages, "
          f"{sum(len(messages[n].fields) for n in names)} fields")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
