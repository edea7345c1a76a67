"""Patch metadata read from the JSON schema (kubeplane.api.schema), shared by all patch kinds.

Strategic merge patch needs, per field, the patch strategy and merge key (upstream reads them
from Go struct tags: `patchStrategy:"merge" patchMergeKey:"name"`). Server-side apply needs the
structural shape (upstream: structured-merge-diff's schema, built from the OpenAPI
x-kubernetes-list-type / list-map-keys / map-type extensions). Both come from one schema node
here. A node is the property schema as written (`{"$ref": ..., "x-kubernetes-...": ...}` side
by side, or `{"type": "array", "items": {...}}`); `None` means "no schema": the subtree is
untyped and the callers fall back to plain JSON semantics.

Lookups are cached by the identity of the schema node: definitions() is loaded once and never
mutated, so ids are stable for the life of the process.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeplane.api.schema import definitions, resolve

Node = dict[str, Any]

SCALAR, STRUCT, MAP, LIST = "scalar", "struct", "map", "list"

# Defaults of list-map key fields, which structured-merge-diff fills from the OpenAPI
# `default` when an applied item omits them (ContainerPort/ServicePort protocol).
KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}


@dataclass(frozen=True, slots=True)
class PatchMeta:
    """What strategic merge patch knows about one field (upstream PatchMeta)."""

    child: Node | None          # schema of the value (lists: of the items)
    strategies: tuple[str, ...]  # ("merge",), ("retainKeys",), ("merge", "retainKeys"), ()
    merge_key: str


@dataclass(frozen=True, slots=True)
class Shape:
    """Structural type of a value for server-side apply (structured-merge-diff's atom)."""

    kind: str                  # SCALAR, STRUCT, MAP or LIST
    atomic: bool               # replaced as a whole, owned as one leaf
    list_type: str = ""        # "map" or "set" for granular lists
    keys: tuple[str, ...] = ()  # list-map keys
    node: Node | None = None   # resolved schema node (fields, additionalProperties, items)

    def child(self, key: str) -> Node | None:
        """Schema node of a struct field or map value; None when untyped."""
        if self.node is None:
            return None
        if self.kind == LIST:
            return self.node.get("items")
        props = self.node.get("properties")
        if props is not None and key in props:
            return props[key]
        extra = self.node.get("additionalProperties")
        return extra if isinstance(extra, dict) else None

    def declares(self, key: str) -> bool:
        """True when key is a declared struct field (not a free-form map entry)."""
        return self.kind == STRUCT and self.node is not None and key in self.node.get("properties", {})

    def preserves_unknown(self) -> bool:
        """A struct that keeps undeclared fields (x-kubernetes-preserve-unknown-fields: schemaconv
        gives it a deduced element type), as free-form map entries."""
        return self.node is not None and self.node.get("x-kubernetes-preserve-unknown-fields") is True


NO_META = PatchMeta(None, (), "")
_DEDUCED = {SCALAR: Shape(SCALAR, True), STRUCT: Shape(MAP, False), LIST: Shape(LIST, True)}
# Keyed by id(node) for speed; each entry keeps its node alive and is used only while it is the
# same node, so an id reused by a newer dict can never hit an old entry.
_meta_cache: dict[tuple[int, str], tuple[Node, PatchMeta]] = {}
_shape_cache: dict[int, tuple[Node, Shape]] = {}
_roots: dict[str, Node] = {}


def root(def_name: str) -> Node | None:
    """The schema node of a kind's definition, or None when the definition is unknown."""
    if def_name not in definitions():
        return None
    node = _roots.get(def_name)
    if node is None:
        node = _roots[def_name] = {"$ref": f"#/$defs/{def_name}"}     # one per kind: stable for the caches
    return node


def lookup_patch_meta(node: Node | None, key: str) -> PatchMeta:
    """Patch strategy, merge key and value schema of field `key` of the map at `node`.

    Upstream: LookupPatchMetadataForStruct / LookupPatchMetadataForSlice (meta.go).
    """
    if node is None:
        return NO_META
    cache_key = (id(node), key)
    hit = _meta_cache.get(cache_key)
    if hit is not None and hit[0] is node:
        return hit[1]
    meta = _compute_patch_meta(node, key)
    _meta_cache[cache_key] = (node, meta)
    return meta


def _compute_patch_meta(node: Node, key: str) -> PatchMeta:
    resolved = resolve(node)
    prop = resolved.get("properties", {}).get(key)
    if prop is None:
        extra = resolved.get("additionalProperties")
        return PatchMeta(extra if isinstance(extra, dict) else None, (), "")
    strategy = prop.get("x-kubernetes-patch-strategy", "")
    strategies = tuple(s for s in strategy.split(",") if s)
    child = prop.get("items", prop) if _is_array(prop) else prop
    return PatchMeta(child, strategies, prop.get("x-kubernetes-patch-merge-key", ""))


def _is_array(node: Node) -> bool:
    t = node.get("type")
    return "items" in node or t == "array" or (isinstance(t, list) and "array" in t)


def shape_of(node: Node | None, value: Any) -> Shape:
    """The structural shape of `value` under schema `node` (deduced from the value if untyped).

    When the value's JSON type contradicts the schema the value wins, the way
    structured-merge-diff's deduced types do: we never reject here, validation does.
    """
    vkind = STRUCT if isinstance(value, dict) else LIST if isinstance(value, list) else SCALAR
    if node is None:
        return _DEDUCED[vkind]
    hit = _shape_cache.get(id(node))
    if hit is not None and hit[0] is node:
        shape = hit[1]
    else:
        shape = _compute_shape(node)
        _shape_cache[id(node)] = (node, shape)
    expected = STRUCT if shape.kind in (STRUCT, MAP) else shape.kind
    if value is not None and expected != vkind:
        return _DEDUCED[vkind]
    return shape


def _compute_shape(node: Node) -> Shape:
    resolved = resolve(node)
    if _is_array(node):
        return _list_shape(node)
    map_type = node.get("x-kubernetes-map-type") or resolved.get("x-kubernetes-map-type")
    atomic = map_type == "atomic"
    if "properties" in resolved:
        return Shape(STRUCT, atomic, node=resolved)
    if "additionalProperties" in resolved or _has_type(resolved, "object"):
        return Shape(MAP, atomic, node=resolved)
    return Shape(SCALAR, True, node=resolved)


def _list_shape(node: Node) -> Shape:
    """List type from x-kubernetes-list-type, else from the patch strategy (as schemaconv)."""
    list_type = node.get("x-kubernetes-list-type")
    merge_key = node.get("x-kubernetes-patch-merge-key", "")
    if list_type is None:
        merging = "merge" in node.get("x-kubernetes-patch-strategy", "").split(",")
        list_type = ("map" if merge_key else "set") if merging else "atomic"
    if list_type == "atomic":
        return Shape(LIST, True, node=node)
    keys = tuple(node.get("x-kubernetes-list-map-keys") or ([merge_key] if merge_key else ()))
    if list_type == "map" and not keys:
        return Shape(LIST, True, node=node)
    return Shape(LIST, False, list_type, keys, node)


def _has_type(node: Node, name: str) -> bool:
    t = node.get("type")
    return t == name or (isinstance(t, list) and name in t)
