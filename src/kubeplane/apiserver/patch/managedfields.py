"""metadata.managedFields: field sets, their FieldsV1 encoding, and ownership on writes.

Mirrors k8s.io/apimachinery/pkg/util/managedfields/internal (fieldmanager decorators) over
sigs.k8s.io/structured-merge-diff (fieldpath sets, typed Compare / ToFieldSet).

A field set is a Python set of paths; a path is a tuple of FieldsV1 path elements:
  "f:spec"                      a struct field or map key
  'k:{"name":"nginx"}'          a list-map item (keys sorted, compact JSON)
  'v:"foregroundDeletion"'      a set item
Only *members* are stored. FieldsV1 writes a member with no children as `{}` and one with
children as `{".": {}, ...}`; intermediate nodes that are not members have no ".".

Example: a Deployment created by kubectl (manager "kubectl-create", operation Update) owns
  {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers":
      {'k:{"name":"nginx"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeplane.api.schema import definitions, ref_name

from ._schema import KEY_DEFAULTS, LIST, SCALAR, Node, Shape, root, shape_of

Path = tuple[str, ...]

APPLY, UPDATE = "Apply", "Update"

# stripMetaManager (internal/stripmeta.go): never owned by anyone.
STRIP_SET: frozenset[Path] = frozenset(
    [("f:apiVersion",), ("f:kind",), ("f:metadata",)]
    + [("f:metadata", "f:" + f) for f in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                         "clusterName", "generation", "managedFields", "resourceVersion")])


@dataclass
class Entry:
    """One managedFields entry (metav1.ManagedFieldsEntry) with its decoded field set."""

    manager: str
    operation: str
    api_version: str
    time: str | None
    subresource: str = ""
    fields: set[Path] = field(default_factory=set)

    def identity(self) -> tuple[str, str, str, str]:
        """BuildManagerIdentifier: appliers are one manager whatever apiVersion they used."""
        return (self.manager, self.operation, "" if self.operation == APPLY else self.api_version, self.subresource)

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = _encoded_fields(frozenset(self.fields))
        if self.subresource:
            out["subresource"] = self.subresource
        return out


@dataclass
class Comparison:
    """typed.Comparison: paths added, modified and removed between two objects."""

    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)


# --- FieldsV1 -------------------------------------------------------------------------------


def fields_v1_to_set(fields: dict[str, Any]) -> set[Path]:
    """Decode a FieldsV1 tree into its member paths; ValueError for a key that is no path
    element (upstream: fieldpath's DeserializePathElement)."""
    out: set[Path] = set()
    stack: list[tuple[dict[str, Any], Path]] = [(fields, ())]
    while stack:
        node, prefix = stack.pop()
        for k, child in node.items():
            if k == ".":
                out.add(prefix)
                continue
            _check_element(k)
            if isinstance(child, dict) and child:
                stack.append((child, prefix + (k,)))
            else:
                out.add(prefix + (k,))
    out.discard(())
    return out


def _check_element(el: str) -> None:
    """A path element as upstream serializes one: f:<name>, k:<JSON object>, v:<JSON value>
    or i:<index>. Upstream: DeserializePathElement"""
    kind, body = el[:2], el[2:]
    if kind == "f:":
        return
    try:
        if kind == "k:" and isinstance(orjson.loads(body), dict):
            return
        if kind == "v:":
            orjson.loads(body)
            return
        if kind == "i:" and body.lstrip("-").isdigit():
            return
    except orjson.JSONDecodeError:
        pass
    raise ValueError(f"unknown path element {el!r}")


def set_to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """Encode member paths as a FieldsV1 tree, keys ordered as structured-merge-diff does."""
    tree: dict[str, Any] = {}
    for p in paths:
        node = tree
        for el in p:
            node = node.setdefault(el, {})
        node["."] = {}
    return _finish(tree)


_ENCODED: dict[frozenset[Path], dict[str, Any]] = {}


def _encoded_fields(paths: frozenset[Path]) -> dict[str, Any]:
    """set_to_fields_v1, remembered: most writes leave most entries' sets as they were (a
    controller's status update re-encodes every manager's entry of the object). The trees
    are shared by the stored objects that carry them, which nobody mutates in place."""
    tree = _ENCODED.get(paths)
    if tree is None:
        if len(_ENCODED) >= 1024:
            _ENCODED.clear()
        tree = _ENCODED[paths] = set_to_fields_v1(paths)
    return tree


def _finish(node: dict[str, Any]) -> dict[str, Any]:
    if list(node) == ["."]:
        return {}
    return {k: ({} if k == "." else _finish(node[k])) for k in sorted(node, key=_element_order)}


_RANK = {".": 0, "f": 1, "k": 2, "v": 3, "i": 4}


def _element_order(el: str) -> tuple[int, str]:
    """PathElement order: field names, then keys, then values, then indexes."""
    return (0, "") if el == "." else (_RANK.get(el[0], 5), el)


def path_string(p: Path) -> str:
    """fieldpath.Path.String(): .spec.template.spec.containers[name="nginx"].image"""
    out = []
    for el in p:
        kind, body = el[0], el[2:]
        if kind == "f":
            out.append("." + body)
        elif kind == "k":
            keys = orjson.loads(body)
            out.append("[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in keys.items()) + "]")
        elif kind == "v":
            out.append(f"[={body}]")
        else:
            out.append(f"[{body}]")
    return "".join(out)


# --- walking typed values --------------------------------------------------------------------


def item_element(shape: Shape, item: Any, i: int) -> str:
    """The path element of a list item (listItemToPathElement)."""
    if shape.list_type == "map" and isinstance(item, dict):
        keys = {}
        for k in sorted(shape.keys):
            if k in item:
                keys[k] = item[k]
            elif k in KEY_DEFAULTS:
                keys[k] = KEY_DEFAULTS[k]
        return "k:" + orjson.dumps(keys).decode()
    if shape.list_type == "set":
        return "v:" + orjson.dumps(item).decode()
    return f"i:{i}"


def to_field_set(value: Any, node: Node | None) -> set[Path]:
    """Every path `value` sets, the way an applier comes to own them (typed.ToFieldSet).

    Scalars and atomic lists/maps are leaves; list items are members themselves (hence
    `.: {}` under `k:{...}`); free-form map entries are members; declared struct fields are
    only containers. An empty struct adds nothing.
    """
    out: set[Path] = set()
    _to_field_set(value, node, (), out)
    return out


def _to_field_set(value: Any, node: Node | None, path: Path, out: set[Path]) -> None:
    if value is None:
        return
    shape = shape_of(node, value)
    if shape.kind == SCALAR or shape.atomic:
        if path:
            out.add(path)
        return
    if shape.kind == LIST:
        child = shape.child("")
        for i, item in enumerate(value):
            p = path + (item_element(shape, item, i),)
            _to_field_set(item, child, p, out)
            out.add(p)
        return
    for k, v in value.items():
        p = path + ("f:" + k,)
        _to_field_set(v, shape.child(k), p, out)
        if not shape.declares(k) and v is not None:
            out.add(p)


def compare(lhs: Any, rhs: Any, node: Node | None) -> Comparison:
    """What changed from lhs to rhs, path by path (typed.TypedValue.Compare)."""
    c = Comparison()
    _compare(lhs, rhs, node, (), c)
    return c


def _compare(lhs: Any, rhs: Any, node: Node | None, path: Path, c: Comparison) -> None:
    shape = shape_of(node, rhs if rhs is not None else lhs)
    if lhs is not None and rhs is not None and _json_kind(lhs) != _json_kind(rhs):
        c.modified.add(path)
        return
    empty = (lhs is None or lhs == {} or lhs == []) and (rhs is None or rhs == {} or rhs == [])
    if shape.kind == SCALAR or shape.atomic or empty:
        _leaf(lhs, rhs, path, c)
        return
    if shape.kind == LIST:
        _compare_items(lhs or [], rhs or [], shape, path, c)
    else:
        lmap, rmap = lhs or {}, rhs or {}
        for k in {**lmap, **rmap}:
            lv, rv = lmap.get(k), rmap.get(k)
            if lv is not None or rv is not None:
                _compare(lv, rv, shape.child(k), path + ("f:" + k,), c)
    if path and lhs is None:
        c.added.add(path)
    elif path and rhs is None:
        c.removed.add(path)


def _compare_items(lhs: list[Any], rhs: list[Any], shape: Shape, path: Path, c: Comparison) -> None:
    lidx = index_items(shape, lhs)
    ridx = index_items(shape, rhs)
    child = shape.child("")
    for pe in {**lidx, **ridx}:
        _compare(lidx.get(pe), ridx.get(pe), child, path + (pe,), c)


def index_items(shape: Shape, items: list[Any]) -> dict[str, Any]:
    """Items by path element; a repeated key keeps its first item (indexListPathElements)."""
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        out.setdefault(item_element(shape, item, i), item)
    return out


def _leaf(lhs: Any, rhs: Any, path: Path, c: Comparison) -> None:
    if not path:
        return
    if lhs is None:
        c.added.add(path)
    elif rhs is None:
        c.removed.add(path)
    elif lhs != rhs or _json_kind(lhs) != _json_kind(rhs):
        c.modified.add(path)


def _json_kind(v: Any) -> str:
    return "map" if isinstance(v, dict) else "list" if isinstance(v, list) else "scalar"


# --- entries ---------------------------------------------------------------------------------


def decode_managed_fields(obj: dict[str, Any] | None) -> list[Entry]:
    """Entries of obj's metadata.managedFields; malformed entries are dropped, and fields that
    are no field set make the whole list unusable ([]: a write's own are then replaced by the
    live object's, as upstream's decodeLiveOrNew falls back when DecodeManagedFields fails)."""
    raw = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    out = []
    for e in raw:
        if not isinstance(e, dict) or not e.get("manager") and not e.get("operation"):
            continue
        fields = e.get("fieldsV1") if isinstance(e.get("fieldsV1"), dict) else {}
        try:
            paths = fields_v1_to_set(fields)
        except ValueError:
            return []
        out.append(Entry(e.get("manager", ""), e.get("operation", ""), e.get("apiVersion", ""), e.get("time"),
                         e.get("subresource", ""), paths))
    return out


def encode_managed_fields(obj: dict[str, Any], entries: list[Entry]) -> None:
    """Write entries (empty ones dropped) into obj in upstream's order.

    sortEncodedManagedFields: Apply before Update, then by time, manager, apiVersion,
    subresource. RFC 3339 UTC timestamps sort chronologically as strings.
    """
    live = sorted((e for e in entries if e.fields),
                  key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))
    meta = obj.setdefault("metadata", {})
    if live:
        meta["managedFields"] = [e.encode() for e in live]
    else:
        meta.pop("managedFields", None)


def without_managed_fields(obj: dict[str, Any] | None) -> dict[str, Any]:
    """A shallow copy of obj whose metadata lacks managedFields (they are not object data)."""
    if not obj:
        return {}
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def ignored_prefixes(subresource: str) -> frozenset[Path]:
    """Reset fields (GetResetFields of the registry strategies): status is not the main
    resource's business, and the status subresource does not own spec or metadata."""
    if subresource == "status":
        return frozenset({("f:spec",), ("f:metadata",)})
    return frozenset({("f:status",)})


def filter_paths(paths: set[Path], ignored: frozenset[Path]) -> set[Path]:
    """Drop stripped meta paths and everything under an ignored prefix (RecursiveDifference)."""
    return {p for p in paths if p not in STRIP_SET and not any(p[:len(i)] == i for i in ignored)}


def _filter_comparison(c: Comparison, ignored: frozenset[Path]) -> Comparison:
    return Comparison(filter_paths(c.added, ignored), filter_paths(c.modified, ignored),
                      filter_paths(c.removed, ignored))


def zero_object(def_name: str) -> dict[str, Any]:
    """The unstructured form of a freshly allocated typed object (creater.New(kind)).

    Non-pointer struct fields (spec, status, template, strategy, metadata) are present as
    empty maps in Go, so on create they are not "added" and get no `.` in FieldsV1. The
    schema does not say which fields are pointers; by Kubernetes convention the Spec,
    Status, Strategy, ObjectMeta and PodTemplateSpec kinds are embedded by value.
    """
    return _zero(def_name, 0)


def _zero(def_name: str, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if depth > 4:
        return out
    for k, prop in definitions().get(def_name, {}).get("properties", {}).items():
        name = ref_name(prop)
        if name and _by_value(name):
            out[k] = _zero(name, depth + 1)
    return out


def _by_value(def_name: str) -> bool:
    short = def_name.rsplit(".", 1)[-1]
    return short.endswith(("Spec", "Status", "Strategy")) or short in ("ObjectMeta", "PodTemplateSpec")


# --- non-apply writes ----------------------------------------------------------------------------


def update_managed_fields(old: dict[str, Any] | None, new: dict[str, Any], *, manager: str, operation: str,
                          api_version: str, now: str, subresource: str = "") -> None:
    """Record in new.metadata.managedFields the fields this write changed (create/update/patch).

    Upstream: managedFieldsUpdater.Update over structured-merge-diff Updater.Update:
      1. entries come from new (a client may rewrite them) or else from old;
      2. compare old and new; fields this write added or modified leave every other
         manager's set (ownership moves to the writer, no conflicts for updates), removed
         fields leave every set;
      3. the writer's entry (manager, operation, apiVersion, subresource) gains the added and
         modified fields and its time becomes now; unchanged writes leave it alone.
    Mutates `new` only; cost is one walk over both objects.
    """
    entries = decode_managed_fields(new) or decode_managed_fields(old)
    def_name = _def_name_of(new)
    node = root(def_name) if def_name else None
    before = without_managed_fields(old) if old is not None else zero_object(def_name or "")
    ignored = ignored_prefixes(subresource)
    c = _filter_comparison(compare(before, without_managed_fields(new), node), ignored)
    touched = c.added | c.modified
    for e in entries:
        e.fields -= touched | c.removed
    if touched:
        me = Entry(manager, operation, api_version, now, subresource, set(touched))
        for e in entries:
            if e.identity() == me.identity():
                me.fields |= e.fields
        entries = [e for e in entries if e.identity() != me.identity()] + [me]
    encode_managed_fields(new, entries)


_KIND_DEFS: dict[tuple[str, str], str] = {}


def _def_name_of(obj: dict[str, Any]) -> str | None:
    """Find the schema definition of obj from apiVersion/kind (x-kubernetes-group-version-kind)."""
    if not _KIND_DEFS:
        for name, d in definitions().items():
            for gvk in d.get("x-kubernetes-group-version-kind", []):
                gv = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk["version"]
                _KIND_DEFS[(gv, gvk["kind"])] = name
    return _KIND_DEFS.get((obj.get("apiVersion", ""), obj.get("kind", "")))
