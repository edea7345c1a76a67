"""The environment that type-checks a rule with `self` and `oldSelf` of the node's declared
type (decltype.py), as upstream's rule environment does: a field the schema lacks is
`undefined field 'x'`, and operands of the wrong types `found no matching overload for ...`,
when the CRD is written.

cel-expr-python declares object types only as protobuf messages: each object type becomes a
message of a descriptor pool built for the node (proto2, so that no JSON-name rule refuses a
property name; int64, double, bool, string, bytes fields, google.protobuf.Timestamp and
Duration, google.protobuf.Value for dyn, repeated and map fields). Protobuf cannot nest lists
and maps directly: a list of lists (or of maps) is typed list(list(dyn)) (list(map(string,
dyn))), and a map of them likewise — less precise than upstream, never stricter. The messages
are named T0, T1, ... and the errors print upstream's names (`selfType0.spec.@idx`).

The typed environment only checks: a rule runs as compiled in the untyped one (evaluation is
unchanged, and fast). It needs the protobuf package (google.protobuf); without it, rules are
checked as before (objects dyn) — the engine aborts the process if given a pool without it,
so `available()` guards every use.
"""
from __future__ import annotations

import functools
import importlib.util
import re
from typing import Any

from .decltype import DeclType

PACKAGE = "kubeplane.celtypes"


@functools.lru_cache(maxsize=1)
def available() -> bool:
    """Whether the protobuf runtime the engine's descriptor pools need can be imported."""
    try:
        if importlib.util.find_spec("google.protobuf") is None:
            return False
        import google.protobuf.message_factory  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


class _Pool:
    """The messages of one declared type tree."""

    def __init__(self) -> None:
        from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, struct_pb2, timestamp_pb2  # type: ignore[import-untyped,import-not-found,unused-ignore]
        self.pool = descriptor_pool.DescriptorPool()
        for module in (timestamp_pb2, duration_pb2, struct_pb2):
            fdp = descriptor_pb2.FileDescriptorProto()
            module.DESCRIPTOR.CopyToProto(fdp)
            self.pool.Add(fdp)
        self.pb = descriptor_pb2
        self.file = descriptor_pb2.FileDescriptorProto(
            name="kubeplane_celtypes.proto", package=PACKAGE, syntax="proto2",
            dependency=["google/protobuf/timestamp.proto", "google/protobuf/duration.proto",
                        "google/protobuf/struct.proto"])
        self.names: dict[str, str] = {}          # message full name -> upstream's type name
        self._by_object: dict[int, str] = {}

    def message(self, t: DeclType) -> str:
        """The message full name of object type t (declared on first use)."""
        got = self._by_object.get(id(t))
        if got is not None:
            return got
        short = f"T{len(self._by_object)}"
        full = f"{PACKAGE}.{short}"
        self._by_object[id(t)] = full
        self.names[full] = t.name
        msg = self.file.message_type.add(name=short)
        F = self.pb.FieldDescriptorProto
        number = 0
        for name, ft in sorted(t.fields.items()):
            number += 1
            if number == 19000:                  # protobuf's reserved field numbers
                number = 20000
            f = msg.field.add(name=name, number=number, json_name=name)
            if ft.kind == "list":
                f.label = F.LABEL_REPEATED
                self._scalar_or_message(f, _nested(ft.elem))
            elif ft.kind == "map":
                f.label = F.LABEL_REPEATED
                entry_name = _camel(name) + "Entry"       # protobuf's rule for a map's entry
                if entry_name in t.fields or any(e.name == entry_name for e in msg.nested_type):
                    raise ValueError(f"map entry {entry_name} collides")    # the engine would refuse the pool
                entry = msg.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING, json_name="key")
                v = entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL, json_name="value")
                self._scalar_or_message(v, _nested(ft.elem))
                f.type = F.TYPE_MESSAGE
                f.type_name = f".{full}.{entry_name}"
            else:
                f.label = F.LABEL_OPTIONAL
                self._scalar_or_message(f, ft)
        return full

    def _scalar_or_message(self, f: Any, t: DeclType | str | None) -> None:
        F = self.pb.FieldDescriptorProto
        if isinstance(t, str):                   # a well-known message standing for nested lists/maps
            f.type, f.type_name = F.TYPE_MESSAGE, t
            return
        kind = t.kind if t is not None else "dyn"
        scalar = _PROTO_SCALARS.get(kind)
        if scalar is not None:
            f.type = getattr(F, scalar)
            return
        f.type = F.TYPE_MESSAGE
        f.type_name = "." + self.message(t) if kind == "object" and t is not None else _WELL_KNOWN[kind]

    def cel_type(self, t: DeclType) -> Any:
        """The variable's type (no protobuf limits here: lists of lists are typed in full)."""
        from cel_expr_python import cel  # type: ignore[import-untyped]
        if t.kind == "object":
            return cel.Type(self.message(t))
        if t.kind == "list" and t.elem is not None:
            return cel.Type.List(self.cel_type(t.elem))
        if t.kind == "map" and t.elem is not None:
            return cel.Type.Map(cel.Type.STRING, self.cel_type(t.elem))
        return {"int": cel.Type.INT, "double": cel.Type.DOUBLE, "bool": cel.Type.BOOL, "string": cel.Type.STRING,
                "bytes": cel.Type.BYTES, "timestamp": cel.Type.TIMESTAMP, "duration": cel.Type.DURATION
                }.get(t.kind, cel.Type.DYN)


_PROTO_SCALARS = {"int": "TYPE_INT64", "double": "TYPE_DOUBLE", "bool": "TYPE_BOOL", "string": "TYPE_STRING",
                  "bytes": "TYPE_BYTES"}
_WELL_KNOWN = {"timestamp": ".google.protobuf.Timestamp", "duration": ".google.protobuf.Duration",
               "dyn": ".google.protobuf.Value"}


def _camel(name: str) -> str:
    """protobuf's ToCamelCase(name, lower_first=false)."""
    out, upper = [], True
    for c in name:
        if c == "_":
            upper = True
        elif upper:
            out.append(c.upper())
            upper = False
        else:
            out.append(c)
    return "".join(out)


def _nested(t: DeclType | None) -> DeclType | str | None:
    """An item or map value as a protobuf field can hold it."""
    if t is not None and t.kind == "list":
        return ".google.protobuf.ListValue"
    if t is not None and t.kind == "map":
        return ".google.protobuf.Struct"
    return t


class TypedEnv:
    """An environment with `self` and `oldSelf` of one declared type; with optional_old_self,
    `oldSelf` is an optional of it (upstream's optionalOldSelf): the expression is checked
    wrapped as `cel.bind(oldSelf, <has old> ? optional.of(<old>) : optional.none(), ...)`
    (the engine cannot declare an optional variable), on lines of its own so that the errors
    point into the rule as written."""

    def __init__(self, t: DeclType, optional_old_self: bool) -> None:
        from kubeplane.apiserver.cel import compiler
        p = _Pool()
        self_type = p.cel_type(t)
        p.pool.Add(p.file)
        self.names = p.names
        self.optional_old_self = optional_old_self
        if optional_old_self:
            types = {"self": self_type, HAS_OLD: compiler.cel.Type.BOOL, OLD_VALUE: self_type}
        else:
            types = {"self": self_type, "oldSelf": self_type}
        self.env = compiler.Env(tuple(types), types, descriptor_pool=p.pool,
                                extensions=[_cross_type_numeric_comparisons()], homogeneous_literals=True)
        self._pool = p.pool                      # the engine's environment refers to it
        # a pool the engine refused (it logs why) leaves the messages unknown: not usable
        probe = f"has(self.{min(t.fields)})" if t.kind == "object" and t.fields else "true"
        self.ok = self.env.compile(probe, (compiler.ANY,)).program is not None

    def check(self, expression: str) -> tuple[str, str]:
        """(upstream's compile error or "", the output type name)."""
        from kubeplane.apiserver.cel import compiler
        if self.optional_old_self:
            wrapped = f"cel.bind(oldSelf, {HAS_OLD} ? optional.of({OLD_VALUE}) : optional.none(),\n{expression}\n)"
            res = self.env.compile(wrapped, (compiler.ANY,))
        else:
            res = self.env.compile(expression, (compiler.ANY,))
        if res.program is None:
            return self.upstream_text(res.error), ""
        return "", self.upstream_text(res.output_type)

    def upstream_text(self, text: str) -> str:
        if self.optional_old_self:            # the wrapping's first line: one line up
            text = _LINE.sub(lambda m: f"<input>:{int(m.group(1)) - 1}:", text)
        text = _UNDEFINED_FIELD.sub(r"undefined field '\1'", text)
        if self.names:
            text = _MESSAGE.sub(lambda m: self.names.get(m.group(0), m.group(0)), text)
        return text


HAS_OLD = "kubeplaneHasOldSelf__"             # the optionalOldSelf wrapping's variables
OLD_VALUE = "kubeplaneOldSelf__"
_LINE = re.compile(r"<input>:([1-9][0-9]*):")
_UNDEFINED_FIELD = re.compile(r"undefined field '([^']*)' not found in struct '[^']*'")
_MESSAGE = re.compile(re.escape(PACKAGE) + r"\.T\d+")


_COMPARISONS = {"_<_": "less", "_<=_": "less_equals", "_>_": "greater", "_>=_": "greater_equals"}


def _cross_type_numeric_comparisons() -> Any:
    """cel-go's CrossTypeNumericComparisons, which Kubernetes' base environment enables
    (`5 < 10.0`, an int field against a double one): the runtime has them, the checker here
    declares them only between operands of one type. Declared for checking only (a program
    of this environment would not plan: the runtime registers its own)."""
    from cel_expr_python import cel
    kinds = {"int64": cel.Type.INT, "uint64": cel.Type.UINT, "double": cel.Type.DOUBLE}
    decls = []
    for fn, word in _COMPARISONS.items():
        decls.append(cel.FunctionDecl(fn, [
            cel.Overload(f"{word}_{a}_{b}", cel.Type.BOOL, [ta, tb], is_member=False)
            for a, ta in kinds.items() for b, tb in kinds.items() if a != b]))
    return cel.CelExtension("kubeplane_cross_type_numeric_comparisons", decls)


_CACHE: dict[tuple[str, bool], TypedEnv | None] = {}


def typed_env(t: DeclType, optional_old_self: bool = False) -> TypedEnv | None:
    """The typed environment of t (cached by its structure: ~1 ms to build), None without
    protobuf."""
    if not available():
        return None
    k = (t.key(), optional_old_self)
    got = _CACHE.get(k)
    if got is None:
        if len(_CACHE) > 256:                 # CRDs come and go: bounded, not an LRU
            _CACHE.clear()
        try:
            got = TypedEnv(t, optional_old_self)
        except (TypeError, ValueError, RuntimeError):
            # a schema protobuf cannot declare (names whose map entries collide): checked
            # untyped, as without protobuf
            got = None
        _CACHE[k] = got
    return got if got is not None and got.ok else None
