"""Strategic merge patch, the server half of k8s.io/apimachinery/pkg/util/strategicpatch.

A strategic merge patch is a JSON merge patch whose lists know how to merge. Per field, the
schema says (x-kubernetes-patch-strategy / x-kubernetes-patch-merge-key):
  * maps merge recursively and `null` deletes a key;
  * lists with strategy "merge" and a merge key merge item by item (containers by name);
    lists of primitives with strategy "merge" are unions (finalizers);
  * every other list is replaced; maps with strategy "replace" are replaced.
Directives in the patch refine this: `$patch: replace|delete` in a map or list item,
`$setElementOrder/<list>` (final order of a merged list), `$deleteFromPrimitiveList/<list>`,
and `$retainKeys` (keys absent from it are cleared; DeploymentSpec.strategy uses it so that
switching to Recreate drops rollingUpdate).

Worked example, `kubectl set image deploy/nginx nginx=nginx:1.25` against a pod template with
containers [nginx:1.24 (ports 80), sidecar]:
  {"$setElementOrder/containers":[{"name":"nginx"},{"name":"sidecar"}],
   "containers":[{"image":"nginx:1.25","name":"nginx"}]}
merges the nginx item by name (ports kept, image replaced), keeps sidecar, and orders the result
nginx, sidecar.

The functions below mirror patch.go one to one (Go mutates its inputs; we copy once at the
entry point and then mutate the copies the same way). Errors are raised as PatchError with
upstream's text and translated to API errors by interpret_strategic_merge_patch_error.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import orjson

from kubeplane.api import errors

from ._schema import Node, lookup_patch_meta, root
from ._status import go_s, go_type, go_v, hkey, same, unprocessable

DIRECTIVE_MARKER = "$patch"
DELETE_DIRECTIVE = "delete"
REPLACE_DIRECTIVE = "replace"
MERGE_DIRECTIVE = "merge"
RETAIN_KEYS_STRATEGY = "retainKeys"
DELETE_FROM_PRIMITIVE_LIST_PREFIX = "$deleteFromPrimitiveList"
RETAIN_KEYS_DIRECTIVE = "$" + RETAIN_KEYS_STRATEGY
SET_ELEMENT_ORDER_PREFIX = "$setElementOrder"

# mergepatch/errors.go
ERR_BAD_JSON_DOC = "invalid JSON document"
ERR_NO_LIST_OF_LISTS = "lists of lists are not supported"
ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST = "invalid patch format of primitive list"
ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS = "invalid patch format of retainKeys"
ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST = "invalid patch format of setElementOrder list"
ERR_PATCH_CONTENT_NOT_MATCH_RETAIN_KEYS = "patch content doesn't match retainKeys list"
ERR_UNSUPPORTED_STRATEGIC_MERGE_PATCH_FORMAT = "strategic merge patch format is not supported"

_UNPROCESSABLE = {ERR_NO_LIST_OF_LISTS, ERR_PATCH_CONTENT_NOT_MATCH_RETAIN_KEYS}


class PatchError(Exception):
    """A strategicpatch error; str() is upstream's error text."""


@dataclass(frozen=True, slots=True)
class MergeOptions:
    merge_parallel_list: bool = True     # apply $deleteFromPrimitiveList / $setElementOrder
    ignore_unmatched_nulls: bool = True  # a null for an absent key is dropped, not kept


SERVER_OPTIONS = MergeOptions()


def strategic_merge_patch(original: dict[str, Any], patch: dict[str, Any], def_name: str) -> dict[str, Any]:
    """Apply a decoded strategic merge patch to `original` (neither input is modified).

    Upstream: StrategicMergeMapPatch (patch.go) + interpretStrategicMergePatchError
    (endpoints/handlers/patch.go).
    """
    try:
        return merge_map(_copy(original), _copy(patch), root(def_name), SERVER_OPTIONS)
    except PatchError as e:
        raise interpret_strategic_merge_patch_error(e) from None


def interpret_strategic_merge_patch_error(err: PatchError) -> errors.StatusError:
    """Map a patch error to HTTP: lists of lists 422, anything else 400, with upstream's text.

    Upstream: interpretStrategicMergePatchError (endpoints/handlers/patch.go). Besides its
    format errors (400), "anything else" (a missing merge key, an unknown $patch value, mixed
    list element types) is a plain Go error there, which the handler reports as a 500 Status
    without a reason. Every one of them is a patch the client got wrong, and nothing the
    server can retry: a 400 with the same text.
    """
    msg = str(err)
    if msg in _UNPROCESSABLE:
        return unprocessable(msg)
    return errors.BadRequest(msg)


def _copy(doc: Any) -> Any:
    try:
        return orjson.loads(orjson.dumps(doc))
    except TypeError:  # ints beyond 64 bits: orjson refuses them, deepcopy does not
        return copy.deepcopy(doc)


# --- maps ------------------------------------------------------------------------------------


def merge_map(original: dict[str, Any] | None, patch: dict[str, Any], schema: Node | None,
              opts: MergeOptions) -> dict[str, Any]:
    """Merge patch into original (both are mutated); returns the merged map.

    Upstream: mergeMap (patch.go). Order matters: $patch first (it short-circuits), then
    $retainKeys clears keys, then $setElementOrder lists are merged and ordered, then every
    remaining key is merged by its field's strategy.
    """
    if DIRECTIVE_MARKER in patch:
        return handle_directive_in_merge_map(patch[DIRECTIVE_MARKER], patch)
    if original is None:
        original = {}
    apply_retain_keys_directive(original, patch, opts)
    merge_patch_into_original(original, patch, schema, opts)
    for k, patch_v in list(patch.items()):
        skip, is_delete_list, no_prefix_key = preprocess_deletion_list_for_merging(
            k, original, patch_v, opts.merge_parallel_list)
        if skip:
            continue
        if no_prefix_key:
            k = no_prefix_key
        if patch_v is None:
            original.pop(k, None)
            if opts.ignore_unmatched_nulls:
                continue
        if k not in original or type(original[k]) is not type(patch_v):
            if not is_delete_list:  # deleting from an absent list is a no-op (#105146)
                _take_patch_value(original, k, patch_v, opts)
            continue
        original[k] = _merge_field(original[k], patch_v, schema, k, is_delete_list, opts)
    return original


def _merge_field(orig_v: Any, patch_v: Any, schema: Node | None, k: str, is_delete_list: bool,
                 opts: MergeOptions) -> Any:
    """Merge one key present on both sides with the same JSON type (tail of mergeMap)."""
    meta = lookup_patch_meta(schema, k)
    _, strategy = extract_retain_keys_patch_strategy(meta.strategies)
    if isinstance(orig_v, dict):
        return merge_map_handler(orig_v, patch_v, meta.child, strategy, opts)
    if isinstance(orig_v, list):
        return merge_slice_handler(orig_v, patch_v, meta.child, strategy, meta.merge_key, is_delete_list, opts)
    value, _keep = remove_directives(patch_v)  # a scalar cannot hold a directive
    return value


def _take_patch_value(original: dict[str, Any], k: str, patch_v: Any, opts: MergeOptions) -> None:
    """A key absent from original (or of another type) takes the patch value, cleaned up."""
    if opts.ignore_unmatched_nulls:
        discard_null_values_from_patch(patch_v)
    value, keep = remove_directives(patch_v)
    if keep:
        original[k] = value
    else:
        original.pop(k, None)


def handle_directive_in_merge_map(directive: Any, patch: dict[str, Any]) -> dict[str, Any]:
    """`$patch: replace` keeps the patch map as is; `$patch: delete` empties the map.

    Upstream: handleDirectiveInMergeMap. `$patch: merge` is not accepted in a map.
    """
    if same(directive, REPLACE_DIRECTIVE):
        del patch[DIRECTIVE_MARKER]
        return patch
    if same(directive, DELETE_DIRECTIVE):
        return {}
    raise PatchError(err_bad_patch_type(directive, patch))


def merge_map_handler(original: Any, patch: Any, schema: Node | None, strategy: str,
                      opts: MergeOptions) -> dict[str, Any]:
    """Upstream: mergeMapHandler. A "replace" strategy map takes the patch wholesale."""
    if not isinstance(original, dict) or not isinstance(patch, dict):
        raise PatchError(err_bad_arg_type({}, patch if isinstance(original, dict) else original))
    if strategy != REPLACE_DIRECTIVE:
        return merge_map(original, patch, schema, opts)
    return patch


def apply_retain_keys_directive(original: dict[str, Any], patch: dict[str, Any], opts: MergeOptions) -> None:
    """Clear keys of original missing from `$retainKeys`; the patch must not set others.

    Upstream: applyRetainKeysDirective. Example (kubectl apply switching to Recreate):
    strategy {type: RollingUpdate, rollingUpdate: {...}} + patch
    {"$retainKeys": ["type"], "type": "Recreate"} -> {type: Recreate}.
    """
    if RETAIN_KEYS_DIRECTIVE not in patch:
        return
    retain = patch.pop(RETAIN_KEYS_DIRECTIVE)
    if not opts.merge_parallel_list:
        original.setdefault(RETAIN_KEYS_DIRECTIVE, retain)
        return
    if not isinstance(retain, list):
        raise PatchError(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS)
    keep = {hkey(v) for v in retain}
    for k, v in patch.items():
        if v is None or k.startswith((DELETE_FROM_PRIMITIVE_LIST_PREFIX, SET_ELEMENT_ORDER_PREFIX)):
            continue
        if hkey(k) not in keep:
            raise PatchError(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS)
    for k in [k for k in original if hkey(k) not in keep]:
        del original[k]


def preprocess_deletion_list_for_merging(key: str, original: dict[str, Any], patch_val: Any,
                                         merge_deletion_list: bool) -> tuple[bool, bool, str]:
    """Returns (skip, is_delete_list, key without the $deleteFromPrimitiveList/ prefix).

    Upstream: preprocessDeletionListForMerging.
    """
    if key.startswith(DELETE_FROM_PRIMITIVE_LIST_PREFIX):
        if not merge_deletion_list:
            original[key] = patch_val
            return True, False, ""
        return False, True, extract_key(key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)
    return False, False, ""


def extract_key(s: str, prefix: str) -> str:
    """"$setElementOrder/containers" -> "containers". Upstream: extractKey."""
    parts = s.split("/", 1)
    if len(parts) <= 1 or parts[0] != prefix:
        if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX:
            raise PatchError(ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST)
        if prefix == SET_ELEMENT_ORDER_PREFIX:
            raise PatchError(ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST)
        raise PatchError(f"fail to find unknown prefix {prefix!r} in {s}")
    return parts[1]


def extract_retain_keys_patch_strategy(strategies: tuple[str, ...]) -> tuple[bool, str]:
    """Split "merge,retainKeys" into (True, "merge"). Upstream: extractRetainKeysPatchStrategy."""
    if not strategies:
        return False, ""
    if len(strategies) == 1:
        return (True, "") if strategies[0] == RETAIN_KEYS_STRATEGY else (False, strategies[0])
    if len(strategies) == 2 and RETAIN_KEYS_STRATEGY in strategies:
        other = strategies[1] if strategies[0] == RETAIN_KEYS_STRATEGY else strategies[0]
        return True, other
    raise PatchError(f"unexpected patch strategy: {go_v(list(strategies))}")


# --- $setElementOrder --------------------------------------------------------------------------


def merge_patch_into_original(original: dict[str, Any], patch: dict[str, Any], schema: Node | None,
                              opts: MergeOptions) -> None:
    """Merge each list named by a `$setElementOrder/<list>` directive and order the result.

    Precedence of order: the $setElementOrder list, then the patch list, then the live list.
    Both the directive and its list are removed from patch. Upstream: mergePatchIntoOriginal.
    """
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER_PREFIX)]:
        order = patch.pop(key)
        if not opts.merge_parallel_list:
            original.setdefault(key, order)
        if not isinstance(order, list):
            raise PatchError(err_bad_arg_type([], order))
        field = extract_key(key, SET_ELEMENT_ORDER_PREFIX)
        found_original, found_patch = field in original, field in patch
        original_list = _as_list(original.get(field)) if found_original else []
        patch_list = _as_list(patch.get(field)) if found_patch else []
        meta = lookup_patch_meta(schema, field)
        _, strategy = extract_retain_keys_patch_strategy(meta.strategies)
        validate_patch_with_set_order_list(patch_list, order, meta.merge_key)
        if not found_original and not found_patch:
            continue
        if found_original and not found_patch:
            merged = original_list
        elif not found_original:
            merged = remove_directives(patch_list)[0]
        else:
            merged = merge_slice_handler(original_list, patch_list, meta.child, strategy, meta.merge_key,
                                         False, opts)
        if meta.merge_key:
            patch_items, server_only = partition_maps_by_present_in_list(merged, order, meta.merge_key)
        else:
            patch_items, server_only = partition_primitives_by_present_in_list(merged, order)
        is_map = slice_element_type(original_list, patch_list) is dict
        original[field] = normalize_element_order(patch_items, server_only, order, original_list,
                                                  meta.merge_key, is_map)
        patch.pop(field, None)


def _as_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise PatchError(err_bad_arg_type([], value))
    return value


def validate_patch_with_set_order_list(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch list's items must appear in $setElementOrder, in the same relative order.

    Upstream: validatePatchWithSetOrderList (items being deleted are ignored).
    """
    if not order or not patch_list:
        return
    non_delete = extract_to_delete_items(patch_list)[0] if merge_key else patch_list
    p = s = 0
    while p < len(non_delete) and s < len(order):
        if isinstance(non_delete[p], dict) and DIRECTIVE_MARKER in non_delete[p]:
            p += 1
            continue
        if merge_key_value_equal(non_delete[p], order[s], merge_key):
            p += 1
        s += 1
    if p < len(non_delete) and s >= len(order):
        raise PatchError(f"the order in patch list:\n{go_v(patch_list)}\n doesn't match "
                         f"{SET_ELEMENT_ORDER_PREFIX} list:\n{go_v(order)}")


def merge_key_value_equal(left: Any, right: Any, merge_key: str) -> bool:
    """Upstream: mergeKeyValueEqual."""
    if not merge_key:
        return same(left, right)
    for side in (left, right):
        if not isinstance(side, dict):
            raise PatchError(err_bad_arg_type({}, side))
        if merge_key not in side:
            raise PatchError(err_no_merge_key(side, merge_key))
    return same(left[merge_key], right[merge_key])


# --- lists ---------------------------------------------------------------------------------------


def merge_slice_handler(original: Any, patch: Any, schema: Node | None, strategy: str, merge_key: str,
                        is_delete_list: bool, opts: MergeOptions) -> list[Any]:
    """Merge lists with strategy "merge" (or a deletion list); replace any other list.

    Upstream: mergeSliceHandler.
    """
    if not isinstance(original, list) or not isinstance(patch, list):
        raise PatchError(err_bad_arg_type([], patch if isinstance(original, list) else original))
    if strategy == MERGE_DIRECTIVE or is_delete_list:
        return merge_slice(original, patch, schema, merge_key, opts, is_delete_list)
    return patch


def merge_slice(original: list[Any], patch: list[Any], schema: Node | None, merge_key: str,
                opts: MergeOptions, is_delete_list: bool) -> list[Any]:
    """Union primitives, or merge maps by merge key; then restore a sensible order.

    Upstream: mergeSlice. Items named in the patch come in patch order, the others keep
    their live order, interleaved where the live list relates them.
    """
    if not original and not patch:
        return original
    elem_type = slice_element_type(original, patch)
    if elem_type is not dict:
        if opts.merge_parallel_list and is_delete_list:
            return delete_from_slice(original, patch)
        merged = deduplicate_scalars(original + patch)
    else:
        if not merge_key:
            raise PatchError("cannot merge lists without merge key for list")
        original, patch = merge_slice_with_special_elements(original, patch, merge_key)
        merged = merge_slice_without_special_elements(original, patch, merge_key, schema, opts)
    if merge_key:
        patch_items, server_only = partition_maps_by_present_in_list(merged, patch, merge_key)
    else:
        patch_items, server_only = partition_primitives_by_present_in_list(merged, patch)
    return normalize_element_order(patch_items, server_only, patch, original, merge_key, elem_type is dict)


def merge_slice_with_special_elements(original: list[Any], patch: list[Any],
                                      merge_key: str) -> tuple[list[Any], list[Any]]:
    """Apply `$patch: delete` / `$patch: replace` items; return (original, patch without them).

    Upstream: mergeSliceWithSpecialElements.
    """
    rest: list[Any] = []
    replace = False
    for v in patch:
        if DIRECTIVE_MARKER not in v:
            rest.append(v)
            continue
        directive = v[DIRECTIVE_MARKER]
        if same(directive, DELETE_DIRECTIVE):
            if merge_key not in v:
                raise PatchError(err_no_merge_key(v, merge_key))
            original = delete_matching_entries(original, merge_key, v[merge_key])
        elif same(directive, REPLACE_DIRECTIVE):
            replace = True  # keep scanning so every other $patch item is pruned
        elif same(directive, MERGE_DIRECTIVE):
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(err_bad_patch_type(directive, v))
    if replace:
        return rest, []
    return original, rest


def delete_matching_entries(original: list[Any], merge_key: str, value: Any) -> list[Any]:
    """Drop every item whose merge key equals value. Upstream: deleteMatchingEntries."""
    out = []
    for i, item in enumerate(original):
        if not isinstance(item, dict):
            raise PatchError(f"value for key {i} is not a map")
        if not (merge_key in item and same(item[merge_key], value)):
            out.append(item)
    return out


def merge_slice_without_special_elements(original: list[Any], patch: list[Any], merge_key: str,
                                         schema: Node | None, opts: MergeOptions) -> list[Any]:
    """Merge each patch item into the live item with the same key, or append it.

    Upstream: mergeSliceWithoutSpecialElements (items without the merge key are an error).
    """
    merged = list(original)
    for v in patch:
        if merge_key not in v:
            raise PatchError(err_no_merge_key(v, merge_key))
        idx = find_map_in_slice_based_on_key_value(merged, merge_key, v[merge_key])
        if idx >= 0:
            merged[idx] = merge_map(merged[idx], v, schema, opts)
        else:
            merged.append(v)
    return merged


def find_map_in_slice_based_on_key_value(items: list[Any], key: str, value: Any) -> int:
    """Index of the first map whose `key` equals value, or -1."""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PatchError(f"value for key {i} is not a map")
        if key in item and same(item[key], value):
            return i
    return -1


def delete_from_slice(current: list[Any], to_delete: list[Any]) -> list[Any]:
    """Remove primitives listed in a $deleteFromPrimitiveList. Upstream: deleteFromSlice."""
    gone = {hkey(v) for v in to_delete}
    return [v for v in current if hkey(v) not in gone]


def deduplicate_scalars(items: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for v in items:
        k = hkey(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def slice_element_type(*slices: list[Any]) -> type:
    """The common element type of the slices. Upstream: sliceElementType."""
    prev: type | None = None
    for s in slices:
        for v in s:
            t = type(v)
            if prev is None:
                if t is list:
                    raise PatchError(ERR_NO_LIST_OF_LISTS)
                prev = t
            elif t is not prev:
                raise PatchError(f"list element types are not identical: {go_v(list(slices))}")
    if prev is None:
        raise PatchError("no elements in any of the given slices")
    return prev


# --- ordering ------------------------------------------------------------------------------------


def partition_primitives_by_present_in_list(items: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    present = {hkey(v) for v in by}
    return [v for v in items if hkey(v) in present], [v for v in items if hkey(v) not in present]


def partition_maps_by_present_in_list(items: list[Any], by: list[Any],
                                      merge_key: str) -> tuple[list[Any], list[Any]]:
    patch: list[Any] = []
    server_only: list[Any] = []
    for v in items:
        if not isinstance(v, dict):
            raise PatchError(err_bad_arg_type({}, v))
        if merge_key not in v:
            raise PatchError(err_no_merge_key(v, merge_key))
        found = find_map_in_slice_based_on_key_value(by, merge_key, v[merge_key]) >= 0
        (patch if found else server_only).append(v)
    return patch, server_only


def normalize_element_order(patch: list[Any], server_only: list[Any], patch_order: list[Any],
                            server_order: list[Any], merge_key: str, is_map: bool) -> list[Any]:
    """Sort patch items by patch order, server-only items by live order, then interleave.

    Upstream: normalizeElementOrder. Example: live [a, b, c], patch [c, a] -> c, a are
    patch items in that order; b is server-only; b sat before c live, so the result is
    [b, c, a].
    """
    patch = normalize_slice_order(patch, patch_order, merge_key, is_map)
    server_only = normalize_slice_order(server_only, server_order, merge_key, is_map)
    return merge_sorted_slice(server_only, patch, server_order, merge_key, is_map)


def normalize_slice_order(to_sort: list[Any], order: list[Any], merge_key: str, is_map: bool) -> list[Any]:
    """Stable-sort to_sort by position in order; `$patch: delete` items go last."""
    to_delete: list[Any] = []
    if is_map:
        validate_merge_key_in_lists(merge_key, to_sort, order)
        to_sort, to_delete = extract_to_delete_items(to_sort)
    positions = [index(order, v, merge_key, is_map) for v in to_sort]
    found = sorted((p, i) for i, p in enumerate(positions) if p >= 0)
    missing = [to_sort[i] for i, p in enumerate(positions) if p < 0]
    return [to_sort[i] for _, i in found] + missing + to_delete


def merge_sorted_slice(left: list[Any], right: list[Any], server_order: list[Any], merge_key: str,
                       is_map: bool) -> list[Any]:
    """Insert left (server-only) items among right (patch) items by their live order.

    Upstream: mergeSortedSlice. A left item goes first only when both items are in the live
    list and the left one came earlier there.
    """
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = index(server_order, left[i], merge_key, is_map)
            ri = index(server_order, right[j], merge_key, is_map)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def index(items: list[Any], value: Any, merge_key: str, is_map: bool) -> int:
    """Position of value in items (maps compared by merge key), or -1. Upstream: index."""
    def key_of(v: Any) -> Any:
        return v.get(merge_key) if isinstance(v, dict) else None

    want = key_of(value) if is_map else value
    for i, v in enumerate(items):
        if same(key_of(v) if is_map else v, want):
            return i
    return -1


def extract_to_delete_items(items: list[Any]) -> tuple[list[Any], list[Any]]:
    keep: list[Any] = []
    delete: list[Any] = []
    for v in items:
        if not isinstance(v, dict):
            raise PatchError(err_bad_arg_type({}, v))
        (delete if same(v.get(DIRECTIVE_MARKER), DELETE_DIRECTIVE) else keep).append(v)
    return keep, delete


def validate_merge_key_in_lists(merge_key: str, *lists: list[Any]) -> None:
    for lst in lists:
        for item in lst:
            if not isinstance(item, dict):
                raise PatchError(err_bad_arg_type({}, item))
            if merge_key not in item:
                raise PatchError(err_no_merge_key(item, merge_key))


# --- cleanup ---------------------------------------------------------------------------------------


def remove_directives(obj: Any) -> tuple[Any, bool]:
    """Drop maps carrying `$patch` from a value taken wholesale; (value, keep it?).

    Upstream: removeDirectives.
    """
    if isinstance(obj, dict):
        if DIRECTIVE_MARKER in obj:
            return None, False
        out = {}
        for k, v in obj.items():
            nv, keep = remove_directives(v)
            if keep:
                out[k] = nv
        return out, True
    if isinstance(obj, list):
        return [nv for nv, keep in map(remove_directives, obj) if keep], True
    return obj, True


def discard_null_values_from_patch(value: Any) -> None:
    """Remove null map values anywhere below value (in place). Upstream: discardNullValuesFromPatch."""
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is None]:
            del value[k]
        for v in value.values():
            discard_null_values_from_patch(v)
    elif isinstance(value, list):
        for v in value:
            discard_null_values_from_patch(v)


# --- error texts (mergepatch/errors.go) ------------------------------------------------------------


def err_no_merge_key(m: dict[str, Any], k: str) -> str:
    return f"map: {go_v(m)} does not contain declared merge key: {k}"


def err_bad_arg_type(expected: Any, actual: Any) -> str:
    return f"expected a {go_type(expected)}, but received a {go_type(actual)}"


def err_bad_patch_type(t: Any, m: dict[str, Any]) -> str:
    return f"unknown patch type: {go_s(t)} in map: {go_v(m)}"
