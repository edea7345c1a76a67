"""OpenAPI v3 documents (/openapi/v3 and /openapi/v3/<group-version>) built from our schema.

kubectl needs them for two things (client-wire.md §0.2, §4):
* `kubectl apply` (default --validate=strict) sends `fieldValidation=Strict` only when the PATCH
  operation tagged with the kind's x-kubernetes-group-version-kind lists a `fieldValidation`
  query parameter (cli-runtime query_param_verifier_v3.go, supportsQueryParamV3); without
  OpenAPI v3 it falls back to protobuf OpenAPI v2, which we do not serve.
* `kubectl explain` walks components.schemas from the kind's schema, following allOf/$ref.

Documents are built on first request and cached; the index's `?hash=` is the upper-case hex
SHA-512 of the document bytes, as upstream, so kubectl's cache (keyed by it) stays valid until
a document really changes.
"""
from __future__ import annotations

import copy
import functools
import hashlib
from typing import Any

import orjson

from kubeplane.api import resources as res
from kubeplane.api.schema import definitions, ref_name

from . import enablement
from . import openapi_v2 as names     # upstream's operationIds, tags, articles (shared with /openapi/v2)

OPENAPI_VERSION = "3.0.0"
INFO = {"title": "Kubernetes", "version": "v1.37.0"}
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_SCHEMA_REF = "#/components/schemas/"
_RESPONSE_TYPES = ("application/json", "application/vnd.kubernetes.protobuf", "application/yaml")
_WATCH_TYPES = ("application/json", "application/json;stream=watch", "application/vnd.kubernetes.protobuf",
                "application/vnd.kubernetes.protobuf;stream=watch", "application/yaml")
_PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json",
                "application/merge-patch+json", "application/strategic-merge-patch+json")

# Schemas upstream serves that our JSON-schema source lacks or words differently. The two
# oneOf types are kube-openapi's OpenAPIV3OneOfTypes; having no "type" makes explain print
# `<IntOrString>` / `map[string]Quantity` rather than `<string>`.
_EXTRA_SCHEMAS: dict[str, dict[str, Any]] = {
    _META + "Patch": {"description": "Patch is provided to give a concrete name and type to the "
                                     "Kubernetes PATCH request body.", "type": "object"},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
                       "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you "
                       "to have, for example, a JSON field that can accept a name or number.",
        "format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": "Quantity is a fixed-point representation of a number. It provides convenient "
                       "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.",
        "oneOf": [{"type": "string"}, {"type": "number"}]},
}


# --- query parameters (names, types and the first sentence of upstream's descriptions) ---------

def _param(name: str, typ: str, description: str, where: str = "query", required: bool = False) -> dict[str, Any]:
    p: dict[str, Any] = {"description": description, "in": where, "name": name,
                         "schema": {"type": typ, "uniqueItems": True}}
    if required:
        p["required"] = True
    return p


P = {
    "allowWatchBookmarks": _param("allowWatchBookmarks", "boolean",
                                  'allowWatchBookmarks requests watch events with type "BOOKMARK".'),
    "continue": _param("continue", "string", "The continue option should be set when retrieving more results "
                                             "from the server."),
    "dryRun": _param("dryRun", "string", "When present, indicates that modifications should not be persisted. "
                                         "Valid values are: - All: all dry run stages will be processed"),
    "fieldManager": _param("fieldManager", "string", "fieldManager is a name associated with the actor or "
                                                     "entity that is making these changes."),
    "fieldSelector": _param("fieldSelector", "string", "A selector to restrict the list of returned objects by "
                                                       "their fields. Defaults to everything."),
    "fieldValidation": _param("fieldValidation", "string",
                              "fieldValidation instructs the server on how to handle objects in the request "
                              "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: "
                              "- Ignore - Warn (the default) - Strict"),
    "force": _param("force", "boolean", 'Force is going to "force" Apply requests. It means user will re-acquire '
                                        "conflicting fields owned by other people. Force flag must be unset for "
                                        "non-apply patch requests."),
    "gracePeriodSeconds": _param("gracePeriodSeconds", "integer", "The duration in seconds before the object "
                                                                  "should be deleted."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": _param(
        "ignoreStoreReadErrorWithClusterBreakingPotential", "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow "
        "fails with a corrupt object error."),
    "labelSelector": _param("labelSelector", "string", "A selector to restrict the list of returned objects by "
                                                       "their labels. Defaults to everything."),
    "limit": _param("limit", "integer", "limit is a maximum number of responses to return for a list call."),
    "orphanDependents": _param("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy."),
    "pretty": _param("pretty", "string", "If 'true', then the output is pretty printed."),
    "propagationPolicy": _param("propagationPolicy", "string", "Whether and how garbage collection will be "
                                                               "performed. Acceptable values are: 'Orphan', "
                                                               "'Background', 'Foreground'."),
    "resourceVersion": _param("resourceVersion", "string", "resourceVersion sets a constraint on what resource "
                                                           "versions a request may be served from."),
    "resourceVersionMatch": _param("resourceVersionMatch", "string", "resourceVersionMatch determines how "
                                                                     "resourceVersion is applied to list calls."),
    "sendInitialEvents": _param("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together "
                                                                "with `watch=true`."),
    "timeoutSeconds": _param("timeoutSeconds", "integer", "Timeout for the list/watch call."),
    "watch": _param("watch", "boolean", "Watch for changes to the described resources and return them as a "
                                        "stream of add, update, and remove notifications."),
}
_LIST_PARAMS = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
                "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
_DELETE_PARAMS = ("dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
                  "orphanDependents", "propagationPolicy")
_DELETECOLLECTION_PARAMS = ("continue", "dryRun", "fieldSelector", "gracePeriodSeconds",
                            "ignoreStoreReadErrorWithClusterBreakingPotential", "labelSelector", "limit",
                            "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch",
                            "sendInitialEvents", "timeoutSeconds")
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_PATCH_PARAMS = _WRITE_PARAMS + ("force",)
_LOG_PARAMS = (("container", "string"), ("follow", "boolean"), ("insecureSkipTLSVerifyBackend", "boolean"),
               ("limitBytes", "integer"), ("previous", "boolean"), ("sinceSeconds", "integer"),
               ("stream", "string"), ("tailLines", "integer"), ("timestamps", "boolean"))


# --- public API --------------------------------------------------------------------------------


def openapi_index() -> dict[str, Any]:
    """GET /openapi/v3: every document's serverRelativeURL, with its content hash."""
    return {"paths": {p: {"serverRelativeURL": f"/openapi/v3/{p}?hash={openapi_hash(p)}"} for p in _doc_paths()}}


def openapi_document(path: str) -> bytes | None:
    """The JSON bytes of one document ("api/v1", "apis/apps/v1", "api", "apis", "apis/apps"), or None."""
    path = path.strip("/")
    return _document_bytes(path) if path in _doc_paths() else None


def openapi_hash(path: str) -> str:
    """Upper-case hex SHA-512 of the document, as upstream's /openapi/v3 index uses."""
    return _hash(path.strip("/"))


@functools.cache
def _doc_paths() -> tuple[str, ...]:
    paths = ["api", "apis"]
    for group, version in enablement.group_versions():
        if group == "metrics.k8s.io":           # metrics-server's own document upstream; none here
            continue
        paths += [f"api/{version}"] if not group else [f"apis/{group}", f"apis/{group}/{version}"]
    return tuple(dict.fromkeys(paths))


@functools.cache
def _document_bytes(path: str) -> bytes:
    return orjson.dumps(build_document(path), option=orjson.OPT_SORT_KEYS)


@functools.cache
def _hash(path: str) -> str:
    return hashlib.sha512(_document_bytes(path)).hexdigest().upper()


def build_document(path: str) -> dict[str, Any]:
    """The OpenAPI v3 document for one of `_doc_paths()`, as a dict."""
    parts = path.split("/")
    if path == "api":
        paths, roots = _discovery_op("/api/", "getCoreAPIVersions", "APIVersions", "core"), [_META + "APIVersions"]
    elif path == "apis":
        paths, roots = _discovery_op("/apis/", "getAPIVersions", "APIGroupList", "apis"), [_META + "APIGroupList"]
    elif parts[0] == "apis" and len(parts) == 2:
        op = f"get{names.gv_id(parts[1], '')}APIGroup"
        paths, roots = _discovery_op(f"/apis/{parts[1]}/", op, "APIGroup", names.tag(parts[1])), [_META + "APIGroup"]
    else:
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        paths, roots = _group_version_paths(group, version)
    return {"components": {"schemas": _schemas(roots)}, "info": INFO, "openapi": OPENAPI_VERSION, "paths": paths}


# --- paths -------------------------------------------------------------------------------------


def _group_version_paths(group: str, version: str) -> tuple[dict[str, Any], list[str]]:
    """Every path of one group-version, and the definitions its operations reference."""
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    gv_id = names.gv_id(group, version)
    tag = names.tag(group, version)
    paths: dict[str, Any] = _discovery_op(prefix + "/", f"get{gv_id}APIResources", "APIResourceList", tag)
    roots = [_META + n for n in ("APIResourceList", "Status", "DeleteOptions", "WatchEvent", "Patch")]
    for r in enablement.resources_in(group, version):
        roots += [r.definition, _list_definition(r)]
        paths.update(_resource_paths(r, prefix, gv_id, tag))
        for sub in r.subresources:
            if sub.name in ("attach", "exec", "portforward"):     # connect operations: strings in and out
                paths.update(_connect_paths(r, sub, prefix, gv_id, tag))
                continue
            if sub.name == "proxy":                  # connect operations: strings in and out
                paths.update(_proxy_paths(r, sub, prefix, gv_id, tag))
                continue
            roots.append(_subresource_definition(r, sub))
            paths.update(_subresource_paths(r, sub, prefix, gv_id, tag))
    return paths, roots


def _resource_paths(r: res.ResourceInfo, prefix: str, gv_id: str, tag: str) -> dict[str, Any]:
    """Collection, item and watch paths of one resource (namespaced and all-namespaces forms)."""
    gvk = {"group": r.group, "kind": r.kind, "version": r.version}
    ns = "Namespaced" if r.namespaced else ""
    base = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{prefix}/{r.plural}"
    scope = [_param("namespace", "string", "object name and auth scope, such as for teams and projects",
                    "path", True)] if r.namespaced else []
    name = _param("name", "string", f"name of the {r.kind}", "path", True)
    obj, lst = _ref(r.definition), _ref(_list_definition(r))
    deleted = obj if names.delete_returns_object(r) else _ref(_META + "Status")
    v = set(r.verbs)
    collection: dict[str, Any] = {"parameters": scope + [P["pretty"]]}
    item: dict[str, Any] = {"parameters": [name] + scope + [P["pretty"]]}
    if "list" in v:
        collection["get"] = _op(f"list or watch objects of kind {r.kind}", f"list{gv_id}{ns}{r.kind}", "list",
                                gvk, tag, _LIST_PARAMS, {"200": _resp("OK", lst, _WATCH_TYPES)})
    if "create" in v:
        collection["post"] = _op(f"create{names.article(r.kind)}{r.kind}", f"create{gv_id}{ns}{r.kind}", "post",
                                 gvk, tag, _WRITE_PARAMS, _created(obj), body=_body(obj))
    if "deletecollection" in v:
        collection["delete"] = _op(f"delete collection of {r.kind}", f"delete{gv_id}Collection{ns}{r.kind}",
                                   "deletecollection", gvk, tag, _DELETECOLLECTION_PARAMS,
                                   {"200": _resp("OK", _ref(_META + "Status"))}, body=_delete_body())
    if "get" in v:
        item["get"] = _op(f"read the specified {r.kind}", f"read{gv_id}{ns}{r.kind}", "get", gvk, tag, (),
                          {"200": _resp("OK", obj)})
    if "update" in v:
        item["put"] = _op(f"replace the specified {r.kind}", f"replace{gv_id}{ns}{r.kind}", "put", gvk, tag,
                          _WRITE_PARAMS, _updated(obj), body=_body(obj))
    if "patch" in v:
        item["patch"] = _op(f"partially update the specified {r.kind}", f"patch{gv_id}{ns}{r.kind}", "patch",
                            gvk, tag, _PATCH_PARAMS, _updated(obj), body=_patch_body(r))
    if "delete" in v:
        item["delete"] = _op(f"delete{names.article(r.kind)}{r.kind}", f"delete{gv_id}{ns}{r.kind}", "delete",
                             gvk, tag, _DELETE_PARAMS, {"200": _resp("OK", deleted), "202": _resp("Accepted", deleted)},
                             body=_delete_body())
    out = {base: collection}
    if len(item) > 1:                      # operations besides the parameters (not the create-only reviews)
        out[f"{base}/{{name}}"] = item
    if "watch" in v:
        out.update(_watch_paths(r, prefix, gv_id, tag, gvk, scope, name))
    if r.namespaced and "list" in v:
        out[f"{prefix}/{r.plural}"] = {
            "get": _op(f"list or watch objects of kind {r.kind}", f"list{gv_id}{r.kind}ForAllNamespaces",
                       "list", gvk, tag, (), {"200": _resp("OK", lst, _WATCH_TYPES)}),
            "parameters": [P[p] for p in _LIST_PARAMS] + [P["pretty"]]}
    return out


def _watch_paths(r: res.ResourceInfo, prefix: str, gv_id: str, tag: str, gvk: dict[str, str],
                 scope: list[dict[str, Any]], name: dict[str, Any]) -> dict[str, Any]:
    """The deprecated /watch/ paths upstream still documents (watch and watchlist actions)."""
    ns = "Namespaced" if r.namespaced else ""
    base = f"{prefix}/watch/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{prefix}/watch/{r.plural}"
    event = _ref(_META + "WatchEvent")
    common = [P[p] for p in _LIST_PARAMS]

    def watch(desc: str, op_id: str, action: str) -> dict[str, Any]:
        return _op(desc, op_id, action, gvk, tag, (), {"200": _resp("OK", event, _WATCH_TYPES)})

    out = {
        base: {"get": watch(f"watch individual changes to a list of {r.kind}. deprecated: use the 'watch' "
                            "parameter with a list operation instead.", f"watch{gv_id}{ns}{r.kind}List",
                            "watchlist"),
               "parameters": common[:-1] + scope + [P["pretty"], common[-1]]},
        f"{base}/{{name}}": {"get": watch(f"watch changes to an object of kind {r.kind}. deprecated: use the "
                                          "'watch' parameter with a list operation instead, filtered to a single "
                                          "item with the 'fieldSelector' parameter.",
                                          f"watch{gv_id}{ns}{r.kind}", "watch"),
                             "parameters": common[:-1] + [name] + scope + [P["pretty"], common[-1]]},
    }
    if r.namespaced:
        out[f"{prefix}/watch/{r.plural}"] = {
            "get": watch(f"watch individual changes to a list of {r.kind}. deprecated: use the 'watch' parameter "
                         "with a list operation instead.", f"watch{gv_id}{r.kind}ListForAllNamespaces",
                         "watchlist"),
            "parameters": common[:-1] + [P["pretty"], common[-1]]}
    return out


def _subresource_paths(r: res.ResourceInfo, sub: res.Subresource, prefix: str, gv_id: str,
                       tag: str) -> dict[str, Any]:
    """Paths of /status, /scale, /binding, /log: operations named <verb><GV><Namespaced><Kind><Sub>."""
    ns = "Namespaced" if r.namespaced else ""
    base = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{prefix}/{r.plural}"
    scope = [_param("namespace", "string", "object name and auth scope, such as for teams and projects",
                    "path", True)] if r.namespaced else []
    sub_group, sub_version = (sub.group, sub.version) if sub.group else (r.group, r.version)
    gvk = {"group": sub_group, "kind": sub.kind, "version": sub_version}
    obj = _ref(_subresource_definition(r, sub))
    suffix = f"{ns}{r.kind}{sub.name.capitalize()}"
    name = _param("name", "string", f"name of the {sub.kind}", "path", True)
    entry: dict[str, Any] = {"parameters": [name] + scope + [P["pretty"]]}
    what = {"status": "status of", "scale": "scale of", "log": "log of"}.get(sub.name, sub.name + " of")
    if sub.name == "log":
        params = [_param(n, t, f"{n} option of the log request") for n, t in _LOG_PARAMS]
        entry["get"] = _op(f"read log of the specified {r.kind}", f"read{gv_id}{suffix}", "get", gvk, tag, (),
                           {"200": {"content": {t: {"schema": {"type": "string"}} for t in
                                                ("application/json", "application/yaml", "text/plain")},
                                    "description": "OK"}})
        entry["get"]["parameters"] = params
        return {f"{base}/{{name}}/log": entry}
    if "get" in sub.verbs:
        entry["get"] = _op(f"read {what} the specified {r.kind}", f"read{gv_id}{suffix}", "get", gvk, tag, (),
                           {"200": _resp("OK", obj)})
    if "update" in sub.verbs:
        entry["put"] = _op(f"replace {what} the specified {r.kind}", f"replace{gv_id}{suffix}", "put", gvk, tag,
                           _WRITE_PARAMS, _updated(obj), body=_body(obj))
    if "patch" in sub.verbs:
        entry["patch"] = _op(f"partially update {what} the specified {r.kind}", f"patch{gv_id}{suffix}", "patch",
                             gvk, tag, _PATCH_PARAMS, _updated(obj), body=_patch_body(r))
    if "create" in sub.verbs:
        entry["post"] = _op(f"create {sub.name} of a {r.kind}", f"create{gv_id}{suffix}", "post", gvk, tag,
                            _WRITE_PARAMS, _created(obj), body=_body(obj))
    return {f"{base}/{{name}}/{sub.name}": entry}


def _proxy_paths(r: res.ResourceInfo, sub: res.Subresource, prefix: str, gv_id: str, tag: str) -> dict[str, Any]:
    """<kind>/proxy and <kind>/proxy/{path}: a connect operation per HTTP method. Upstream: the
    installer's connect routes (ProxyREST's ConnectMethods)."""
    from .openapi_v2 import PROXY_METHODS, PROXY_PATH_DOC
    ns = "Namespaced" if r.namespaced else ""
    base = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{prefix}/{r.plural}"
    scope = [_param("namespace", "string", "object name and auth scope, such as for teams and projects",
                    "path", True)] if r.namespaced else []
    gvk = {"group": sub.group or r.group, "kind": sub.kind, "version": sub.version or r.version}
    name = [_param("name", "string", f"name of the {sub.kind}", "path", True)]
    query = [_param("path", "string", PROXY_PATH_DOC.get(r.kind, ""))]
    ok = {"200": {"content": {"*/*": {"schema": {"type": "string"}}}, "description": "OK"}}
    out = {}
    for path, suffix, params in ((f"{base}/{{name}}/proxy", "", name + scope + query),
                                 (f"{base}/{{name}}/proxy/{{path}}", "WithPath",
                                  name + scope + [_param("path", "string", "path to the resource", "path", True)]
                                  + query)):
        entry: dict[str, Any] = {m: _op(f"connect {m.upper()} requests to proxy of {r.kind}",
                                        f"connect{gv_id}{m.capitalize()}{ns}{r.kind}Proxy{suffix}", "connect", gvk,
                                        tag, (), ok) for m in PROXY_METHODS}
        entry["parameters"] = params
        out[path] = entry
    return out


def _connect_paths(r: res.ResourceInfo, sub: res.Subresource, prefix: str, gv_id: str, tag: str) -> dict[str, Any]:
    """pods/attach, exec, portforward: connect GET and POST with the options as query parameters
    (openapi_v2.CONNECT_PARAMS). Upstream: the installer's connect routes."""
    from .openapi_v2 import CONNECT_METHODS, CONNECT_PARAMS
    ns = "Namespaced" if r.namespaced else ""
    base = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{prefix}/{r.plural}"
    scope = [_param("namespace", "string", "object name and auth scope, such as for teams and projects",
                    "path", True)] if r.namespaced else []
    gvk = {"group": sub.group or r.group, "kind": sub.kind, "version": sub.version or r.version}
    params = [_param("name", "string", f"name of the {sub.kind}", "path", True)] + scope + [
        _param(name, typ, doc) for name, typ, doc in CONNECT_PARAMS[sub.name]]
    ok = {"200": {"content": {"*/*": {"schema": {"type": "string"}}}, "description": "OK"}}
    entry: dict[str, Any] = {m: _op(f"connect {m.upper()} requests to {sub.name} of {r.kind}",
                                    f"connect{gv_id}{m.capitalize()}{ns}{r.kind}{sub.name.capitalize()}", "connect",
                                    gvk, tag, (), ok) for m in CONNECT_METHODS}
    entry["parameters"] = sorted(params, key=lambda p: p["name"])
    return {f"{base}/{{name}}/{sub.name}": entry}


def _discovery_op(path: str, op_id: str, kind: str, tag: str) -> dict[str, Any]:
    desc = {"APIResourceList": "get available resources", "APIGroup": "get information of a group"}.get(
        kind, "get available API versions")
    op = {"description": desc, "operationId": op_id,
          "responses": {"200": _resp("OK", _ref(_META + kind)), "401": {"description": "Unauthorized"}},
          "tags": [tag]}
    return {path: {"get": op}}


def _op(description: str, op_id: str, action: str, gvk: dict[str, str], tag: str, params: tuple[str, ...],
        responses: dict[str, Any], body: dict[str, Any] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"description": description, "operationId": op_id}
    if params:
        op["parameters"] = [P[p] for p in params]
    if body is not None:
        op["requestBody"] = body
    op["responses"] = {**responses, "401": {"description": "Unauthorized"}}
    op.update({"tags": [tag], "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk})
    return op


def _resp(description: str, schema: dict[str, Any], types: tuple[str, ...] = _RESPONSE_TYPES) -> dict[str, Any]:
    return {"content": {t: {"schema": schema} for t in types}, "description": description}


def _created(obj: dict[str, Any]) -> dict[str, Any]:
    return {"200": _resp("OK", obj), "201": _resp("Created", obj), "202": _resp("Accepted", obj)}


def _updated(obj: dict[str, Any]) -> dict[str, Any]:
    return {"200": _resp("OK", obj), "201": _resp("Created", obj)}


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"*/*": {"schema": obj}}, "required": True}


def _patch_body(r: res.ResourceInfo) -> dict[str, Any]:
    """The patch types r accepts: kubectl apply sends a strategic merge patch only to a kind
    whose PATCH lists it (custom resources do not: ResourceDefinition.strategic_merge)."""
    types = [t for t in _PATCH_TYPES
             if t != "application/strategic-merge-patch+json" or getattr(r, "strategic_merge", True)]
    return {"content": {t: {"schema": _ref(_META + "Patch")} for t in types}, "required": True}


def _delete_body() -> dict[str, Any]:
    return {"content": {"*/*": {"schema": _ref(_META + "DeleteOptions")}}}


def _ref(def_name: str) -> dict[str, Any]:
    return {"$ref": _SCHEMA_REF + public_name(def_name)}


public_name = names.public_name


def _list_definition(r: res.ResourceInfo) -> str:
    return r.definition + "List"


def _subresource_definition(r: res.ResourceInfo, sub: res.Subresource) -> str:
    if sub.group:                      # scale: io.k8s.api.autoscaling.v1.Scale; token: ...authentication.v1...
        return f"io.k8s.api.{sub.group.split('.')[0]}.{sub.version}.{sub.kind}"
    return r.definition.rsplit(".", 1)[0] + "." + sub.kind


# --- schemas -----------------------------------------------------------------------------------


# What v3 publishes for a custom resource's definition instead of the definition itself (which
# the decoders read): upstream's builder output (apiextensions/customresource.py openapi_v3).
CUSTOM_V3: dict[str, dict[str, Any]] = {}


def _schemas(roots: list[str]) -> dict[str, Any]:
    """components.schemas: the roots and every definition they reach, converted to OpenAPI 3."""
    defs = {**definitions(), **CUSTOM_V3} if CUSTOM_V3 else definitions()
    out: dict[str, Any] = {}
    todo = [n for n in roots if n in defs or n in _EXTRA_SCHEMAS]
    while todo:
        name = todo.pop()
        if name in out:
            continue
        if name in _EXTRA_SCHEMAS:
            out[name] = copy.deepcopy(_EXTRA_SCHEMAS[name])
            continue
        found: set[str] = set()
        out[name] = convert_schema(defs[name], found, top=True)
        todo.extend(n for n in found if n not in out)
    return dict(sorted((public_name(k), v) for k, v in out.items()))


def convert_schema(node: Any, refs: set[str], top: bool = False) -> Any:
    """Rewrite a JSON-schema node as OpenAPI 3: refs to components (allOf-wrapped when the node
    carries siblings such as a description, as upstream does), `["integer","null"]` -> "integer",
    and the kubernetes-validate-only apiVersion/kind enums dropped."""
    if isinstance(node, list):
        return [convert_schema(x, refs) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    name = ref_name(node)
    for k, v in node.items():
        if k == "$ref":
            continue
        if k == "type" and isinstance(v, list):
            v = next((t for t in v if t != "null"), "object")
        elif k == "properties":
            v = {p: convert_schema(_drop_enum(p, s) if top else s, refs) for p, s in v.items()}
        elif k in ("items", "additionalProperties", "oneOf", "allOf", "anyOf", "not"):
            v = convert_schema(v, refs)
        out[k] = v
    if name:
        refs.add(name)
        ref = _ref(name)
        return {"allOf": [ref], **out} if out else ref
    return out


def _drop_enum(prop: str, schema: dict[str, Any]) -> dict[str, Any]:
    if prop in ("apiVersion", "kind") and "enum" in schema:
        return {k: v for k, v in schema.items() if k != "enum"}
    return schema
