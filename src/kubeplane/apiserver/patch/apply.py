"""Server-side apply (`kubectl apply --server-side`, content type application/apply-patch+yaml).

Upstream: FieldManager.Apply (k8s.io/apimachinery/pkg/util/managedfields) over
structured-merge-diff's Updater.Apply (merge/update.go):
  1. merge the applied configuration into the live object (typed.Merge: list maps merge by
     key, atomic lists and maps are replaced, granular maps merge key by key);
  2. the manager now owns exactly the fields its configuration sets (ToFieldSet);
  3. prune: fields it owned at its previous apply, omits now, and nobody else owns, are
     removed from the object;
  4. compare live and result: fields owned by another manager whose value this apply adds
     or changes are conflicts -> 409 unless force, in which case they change hands.
  5. the upgrade from client-side apply (lastAppliedManager): for the manager "kubectl", a
     conflict on a field the last-applied-configuration annotation sets, with the value the
     object still has, is no conflict: the apply is forced.
Not modelled: the annotation rewrite of lastAppliedUpdater, the 10-Update-manager cap
(capManagersManager), and schema-change reconciliation.
"""
from __future__ import annotations

import json
from typing import Any

from kubeplane.api import errors

from ._schema import LIST, MAP, SCALAR, STRUCT, Node, Shape, root, shape_of
from .managedfields import (
    APPLY,
    UPDATE,
    Entry,
    Path,
    compare,
    decode_managed_fields,
    encode_managed_fields,
    filter_paths,
    ignored_prefixes,
    index_items,
    item_element,
    path_string,
    to_field_set,
    without_managed_fields,
)
from .strategic import _copy, discard_null_values_from_patch


# lastAppliedManager upgrades client-side apply only for kubectl's server-side apply: another
# manager name opts out.
KUBECTL = "kubectl"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class ApplyConflict(errors.Conflict):
    """409 Conflict listing each conflicting field (errors.NewApplyConflict)."""

    def __init__(self, message: str, causes: list[dict[str, str]]) -> None:
        errors.StatusError.__init__(self, 409, "Conflict", message, {"causes": causes})


def server_side_apply(live: dict[str, Any] | None, config: dict[str, Any], def_name: str, *, manager: str,
                      force: bool, api_version: str, now: str, subresource: str = "") -> dict[str, Any]:
    """Apply `config` as `manager` to `live` (None when creating); returns the new object.

    Neither input is modified. Raises ApplyConflict (409) when another manager owns a field
    this apply changes and force is false, and BadRequest for a malformed configuration.
    """
    _validate_config(config, api_version)
    node = root(def_name)
    _refuse_undeclared(config, node)
    ignored = ignored_prefixes(subresource)
    config = _without_ignored(config, ignored)
    discard_null_values_from_patch(config)
    live_obj = _copy(without_managed_fields(live))
    entries = decode_managed_fields(live)
    me = Entry(manager, APPLY, api_version, now, subresource, filter_paths(to_field_set(config, node), ignored))
    previous = next((e for e in entries if e.identity() == me.identity()), None)
    others = [e for e in entries if e.identity() != me.identity()]

    merged = merge(live_obj, config, node) or {}
    if previous is not None:
        # Only what the merged object's field set holds can go (addBackDanglingItems): a struct
        # an Update entry owned as a whole (`.` under it, as kubectl's upgrade from client-side
        # apply hands over) loses its fields, not itself.
        dropped = (previous.fields - me.fields) & to_field_set(merged, node)
        prune(merged, dropped, node, me.fields.union(*(e.fields for e in others)))
    c = compare(live_obj, merged, node)
    changed = filter_paths(c.added | c.modified, ignored)
    allowed = _last_applied_fields(live_obj, node, api_version) if manager == KUBECTL and not force else set()
    _take_ownership(others, changed, filter_paths(c.removed, ignored), force, allowed)
    if previous is not None and previous.fields == me.fields and merged == live_obj:
        me.time = previous.time  # a no-op apply does not touch the timestamp
    encode_managed_fields(merged, others + [me])
    return merged


def _validate_config(config: dict[str, Any], api_version: str) -> None:
    """The checks of structuredManager.Apply on the applied object."""
    meta = config.get("metadata")
    if isinstance(meta, dict) and meta.get("managedFields") is not None:
        raise errors.BadRequest("metadata.managedFields must be nil")
    if config.get("apiVersion") != api_version:
        raise errors.BadRequest("Incorrect version specified in apply patch. Specified patch version: "
                                f"{config.get('apiVersion', '')}, expected: {api_version}")


def _refuse_undeclared(config: dict[str, Any], node: Node | None) -> None:
    """An applied configuration may only set fields the schema declares: the typed conversion
    of the patch object fails otherwise, whatever fieldValidation says, e.g.
    `failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.foo:
    field not declared in schema`. Upstream answers it as a 500 (the plain error of
    structuredManager.Apply); kubernetes#139253 makes it the 400 it is, with the same text.
    Upstream: structuredManager.Apply (managedfields/internal/structuredmerge.go),
    ValidationErrors.Error (structured-merge-diff typed/validate.go).
    """
    found: list[Path] = []
    _undeclared(config, node, (), found)
    if not found:
        return
    lines = [f"{path_string(p)}: field not declared in schema" for p in found]
    detail = lines[0] if len(lines) == 1 else "errors:\n" + "\n".join("  " + line for line in lines)
    meta = config.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    group, _, version = str(config.get("apiVersion", "")).rpartition("/")
    gvk = f"{group}/{version}, Kind={config.get('kind', '')}"
    nn = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
    raise errors.BadRequest(f"failed to create typed patch object ({nn}; {gvk}): {detail}")


def _undeclared(value: Any, node: Node | None, path: Path, out: list[Path]) -> None:
    """Paths of struct fields the schema does not declare, in document order."""
    if value is None or node is None:
        return
    shape = shape_of(node, value)
    if shape.kind == LIST:
        child = shape.child("")
        for i, item in enumerate(value):
            _undeclared(item, child, path + (item_element(shape, item, i),), out)
    elif shape.kind == STRUCT:
        for k, v in value.items():
            p = path + ("f:" + k,)
            if shape.declares(k):
                _undeclared(v, shape.child(k), p, out)
            elif not shape.preserves_unknown():
                out.append(p)
    elif shape.kind == MAP:
        for k, v in value.items():
            _undeclared(v, shape.child(k), path + ("f:" + k,), out)


def _without_ignored(config: dict[str, Any], ignored: frozenset[Path]) -> dict[str, Any]:
    """A private copy of config without top-level reset fields (status on the main resource)."""
    return _copy({k: v for k, v in config.items() if ("f:" + k,) not in ignored})


def _take_ownership(others: list[Entry], changed: set[Path], removed: set[Path], force: bool,
                    allowed: set[Path]) -> None:
    """Conflicts are other managers' fields this apply changes (Updater.update); when all of
    them are `allowed` (lastAppliedManager.Apply) the apply is forced, else those are left out
    of the error."""
    conflicts = [(e, sorted(e.fields & changed, key=path_string)) for e in others]
    conflicts = [(e, paths) for e, paths in conflicts if paths]
    if conflicts and not force:
        conflicts = [(e, [p for p in paths if p not in allowed]) for e, paths in conflicts]
        conflicts = [(e, paths) for e, paths in conflicts if paths]
        if conflicts:
            raise _conflict_error(conflicts)
    for e in others:
        e.fields -= changed | removed


def _last_applied_fields(live: dict[str, Any], node: Node | None, api_version: str) -> set[Path]:
    """The fields of the last-applied-configuration annotation whose values the live object
    still has: client-side apply set them, so kubectl's server-side apply may take them over.
    Nothing when the annotation is missing, unreadable, of another version or not in the schema.
    Upstream: lastAppliedManager.allowedConflictsFromLastApplied (managedfields/internal/
    lastappliedmanager.go).
    """
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        last = json.loads(text) if isinstance(text, str) and text else None
    except (ValueError, RecursionError):
        return set()
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return set()
    undeclared: list[Path] = []
    _undeclared(last, node, (), undeclared)
    if undeclared:
        return set()
    c = compare(last, live, node)
    return to_field_set(last, node) - c.modified - c.added - c.removed


def _conflict_error(conflicts: list[tuple[Entry, list[Path]]]) -> ApplyConflict:
    """Upstream: NewConflictError / getConflictMessage (internal/conflict.go)."""
    conflicts.sort(key=lambda ep: _print_manager(ep[0]))
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_print_manager(e)}",
               "field": path_string(p)} for e, paths in conflicts for p in paths]
    n = len(causes)
    if n == 1:
        e, paths = conflicts[0]
        return ApplyConflict(f"Apply failed with 1 conflict: conflict with {_print_manager(e)}: "
                             f"{path_string(paths[0])}", causes)
    lines = []
    for e, paths in conflicts:
        lines.append(f"conflicts with {_print_manager(e)}:")
        lines.extend(f"- {path_string(p)}" for p in paths)
    return ApplyConflict(f"Apply failed with {n} conflicts: " + "\n".join(lines), causes)


def _print_manager(e: Entry) -> str:
    """printManager: `"kubectl-client-side-apply" using apps/v1` for an updater."""
    s = errors.go_quote(e.manager)
    if e.subresource:
        s = f"{s} with subresource {errors.go_quote(e.subresource)}"
    return f"{s} using {e.api_version}" if e.operation == UPDATE else s


# --- typed merge ---------------------------------------------------------------------------------


def merge(lhs: Any, rhs: Any, node: Node | None) -> Any:
    """Merge rhs (the applied configuration) into lhs (live); rhs wins at every leaf.

    Upstream: typed.TypedValue.Merge (merge.go, mergingWalker with ruleKeepRHS).
    """
    if rhs is None:
        return lhs
    if lhs is None:
        return rhs
    shape = shape_of(node, rhs)
    empty = lhs in ({}, []) and rhs in ({}, [])
    if shape.kind == SCALAR or shape.atomic or empty or type(lhs) is not type(rhs):
        return rhs
    if shape.kind == LIST:
        return _merge_items(lhs, rhs, shape)
    out = dict(lhs)
    for k, rv in rhs.items():
        out[k] = merge(lhs.get(k), rv, shape.child(k))
    return out


def _merge_items(lhs: list[Any], rhs: list[Any], shape: Shape) -> list[Any]:
    """Merge two keyed lists keeping both orders as far as they agree (visitListItems).

    Worked example: live [a, b, c], applied [c, d, a] -> shared items follow the applied
    order (c then a); live-only b stays before the shared item it preceded; d follows c:
    result [b, c, d, a].
    """
    lidx, ridx = index_items(shape, lhs), index_items(shape, rhs)
    lorder, rorder = list(lidx), list(ridx)
    shared = [pe for pe in rorder if pe in lidx]
    child = shape.child("")
    out: list[Any] = []
    li = ri = 0
    next_shared = shared.pop(0) if shared else None
    while li < len(lorder) or ri < len(rorder):
        if li < len(lorder) and ri < len(rorder):
            pe = lorder[li]
            if pe == rorder[ri]:
                out.append(merge(lidx[pe], ridx[pe], child))
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in ridx and next_shared is not None and next_shared != pe:
                li += 1  # a shared item, but not the one due now
                continue
        if li < len(lorder) and lorder[li] not in ridx:
            out.append(lidx[lorder[li]])
            li += 1
            continue
        if ri < len(rorder):
            pe = rorder[ri]
            out.append(merge(lidx.get(pe), ridx[pe], child))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
        else:
            li += 1  # a shared item already emitted from the right side
    return out


# --- pruning -------------------------------------------------------------------------------------


def prune(obj: dict[str, Any], dropped: set[Path], node: Node | None, owned: set[Path]) -> None:
    """Remove fields the applier dropped from its configuration, unless someone owns them.

    Upstream: Updater.prune (RemoveItems, then addBackOwnedItems): a dropped path stays when
    it, or anything below it, is owned by a manager (the applier included). Shallow paths go
    first: a list item nobody owns any part of is removed whole while its key fields still
    identify it, and the paths below it then no longer resolve.
    """
    keep = {p[:i] for p in owned for i in range(1, len(p) + 1)}
    for path in sorted(dropped, key=len):
        if path not in keep:
            _remove_path(obj, path, node)


def _remove_path(obj: Any, path: Path, node: Node | None) -> None:
    parent, schema = obj, node
    for el in path[:-1]:
        parent, schema = _step(parent, el, schema)
        if parent is None:
            return
    last = path[-1]
    if isinstance(parent, dict) and last.startswith("f:"):
        parent.pop(last[2:], None)
    elif isinstance(parent, list):
        shape = shape_of(schema, parent)
        parent[:] = [v for i, v in enumerate(parent) if item_element(shape, v, i) != last]


def _step(value: Any, el: str, node: Node | None) -> tuple[Any, Node | None]:
    """Descend one path element; (None, None) when the path does not exist."""
    shape = shape_of(node, value)
    if isinstance(value, dict) and el.startswith("f:"):
        return value.get(el[2:]), shape.child(el[2:])
    if isinstance(value, list) and shape.kind == LIST:
        for i, v in enumerate(value):
            if item_element(shape, v, i) == el:
                return v, shape.child("")
    return None, None
