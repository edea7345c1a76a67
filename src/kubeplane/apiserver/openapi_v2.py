"""GET /openapi/v2: the Swagger 2.0 document of every served resource, as kube-apiserver serves it.

Some clients still read it: client-go's discovery `OpenAPISchema()` (protobuf), kubectl before
1.27 (`explain`, `apply`'s validation), and tools built on them. It is built from the same data
as /openapi/v3 (api/resources.py, api/schema/definitions.json), once, on first request.

How upstream builds it, and so how we do (Upstream: kube-openapi pkg/builder/openapi.go,
parameters.go, over the routes of registerResourceHandlers in apiserver/pkg/endpoints/installer.go):
* one operation per route: list/create/deletecollection on the collection, get/put/patch/delete
  on the item, the deprecated /watch/ paths, the all-namespaces list, and the subresources;
  operationIds are <verb><Group><Version>[Namespaced]<Kind>[<Subresource>][ForAllNamespaces];
* the parameters every operation of a path shares (same name and `in`, not a body) move to the
  path item (findCommonParameters); both lists are sorted by (name, in);
* every parameter but `name`, `dryRun`, `fieldValidation` and a kind's own body is then replaced
  by a `$ref` into the top-level `parameters`, named `<name>-<hash>`: the first 6 bytes of the
  FNV-1 64 hash of the parameter's JSON, URL-safe base64 (deduplicateParameters), so `pretty`
  is "pretty-tJGM1-ng" exactly as in upstream's api/openapi-spec/swagger.json;
* keys come in Go's struct order, as kube-openapi marshals (swagger, info, paths, definitions,
  parameters, securityDefinitions, security; an operation's description, consumes, produces,
  schemes, tags, operationId, parameters, responses, then the x-kubernetes-* extensions); maps
  are sorted.

Served as upstream's OpenAPIService (kube-openapi pkg/handler/handler.go): JSON, or the protobuf
form (gnostic's openapi_v2.Document, see openapi_v2_proto.py) when the Accept header asks for
it, 406 otherwise; `ETag` is the upper-case hex SHA-512 of the JSON bytes (the same for both
forms, which differ by `Vary: Accept`); `If-None-Match` answers 304; gzip when the client
accepts it (gziphandler, bodies of 1400 bytes or more).
"""
from __future__ import annotations

import asyncio
import base64
import functools
import gzip
import hashlib
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

import orjson

from kubeplane.api import resources as res
from kubeplane.api.schema import definitions, ref_name

from . import enablement
from .request import Request, Response

SWAGGER_VERSION = "2.0"
INFO = {"title": "Kubernetes", "version": "v1.37.0"}   # EffectiveVersion's "v1.37.0", as /openapi/v3
JSON_TYPE = "application/json"
PROTOBUF_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_PROTOBUF_DEPRECATED_SUBTYPE = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
GZIP_MIN_SIZE = 1400            # gziphandler.DefaultMinSize

_DEF = "#/definitions/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_MEDIA = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
_WATCH_MEDIA = _MEDIA + ["application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"]
_PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json",
                "application/strategic-merge-patch+json", "application/apply-patch+yaml"]
_UNAUTHORIZED = {"description": "Unauthorized"}


def _patch_types(r: res.ResourceInfo) -> list[str]:
    """Custom resources take no strategic merge patch (ResourceDefinition.strategic_merge)."""
    if getattr(r, "strategic_merge", True):
        return _PATCH_TYPES
    return [t for t in _PATCH_TYPES if t != "application/strategic-merge-patch+json"]


def delete_returns_object(r: res.ResourceInfo) -> bool:
    """Whether DELETE's 200/202 answer is documented as the object rather than a Status: the
    resource's definition says so (returns_deleted_object, not openapi_delete_status).
    Upstream: the installer's deleteReturnsDeletedObject (rest.MayReturnFullObjectDeleter)."""
    from .registry import REGISTRY       # here: the registry imports every kind
    d = REGISTRY.lookup(r.group, r.version, r.plural)
    return d is not None and d.returns_deleted_object and not d.openapi_delete_status


# --- parameters, in Go's marshalling order (uniqueItems, type, description, name, in, required) ---

def _query(name: str, typ: str, description: str) -> dict[str, Any]:
    return {"uniqueItems": True, "type": typ, "description": description, "name": name, "in": "query"}


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {"uniqueItems": True, "type": "string", "description": description, "name": name, "in": "path",
            "required": True}


def _body(def_name: str, required: bool = True) -> dict[str, Any]:
    p: dict[str, Any] = {"name": "body", "in": "body"}
    if required:
        p["required"] = True
    p["schema"] = {"$ref": _DEF + def_name}
    return p


_FIELD_MANAGER = ("fieldManager is a name associated with the actor or entity that is making these changes. The "
                  "value must be less than or 128 characters long, and only contain printable characters, as "
                  "defined by https://golang.org/pkg/unicode/#IsPrint.")
# The options structs' SwaggerDoc() texts, which AddObjectParams turns into query parameters.
Q = {p["name"]: p for p in (
    _query("allowWatchBookmarks", "boolean",
           'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not implement '
           "bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not "
           "assume bookmarks are returned at any specific interval, nor may they assume the server will send any "
           "BOOKMARK event during a session. If this is not a watch, this field is ignored."),
    _query("continue", "string",
           "The continue option should be set when retrieving more results from the server. Since this value is "
           "server defined, clients may only use the continue value from a previous query result with identical "
           "query parameters (except for the value of continue) and the server may reject a continue value it "
           "does not recognize. If the specified continue value is no longer valid whether due to expiration "
           "(generally five to fifteen minutes) or a configuration change on the server, the server will respond "
           "with a 410 ResourceExpired error together with a continue token. If the client needs a consistent "
           "list, it must restart their list without the continue field. Otherwise, the client may send another "
           "list request with the token received with the 410 error, the server will respond with a list "
           "starting from the next key, but from the latest snapshot, which is inconsistent from the previous "
           "list results - objects that are created, modified, or deleted after the first list request will be "
           'included in the response, as long as their keys are after the "next key".\n\nThis field is not '
           "supported when watch is true. Clients may start a watch from the last resourceVersion value returned "
           "by the server and not miss any modifications."),
    _query("dryRun", "string",
           "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun "
           "directive will result in an error response and no further processing of the request. Valid values "
           "are: - All: all dry run stages will be processed"),
    _query("fieldManager", "string", _FIELD_MANAGER),
    _query("fieldSelector", "string",
           "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
    _query("fieldValidation", "string",
           "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) "
           "containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown "
           "fields that are silently dropped from the object, and will ignore all but the last duplicate field "
           "that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a "
           "warning via the standard warning response header for each unknown field that is dropped from the "
           "object, and for each duplicate field that is encountered. The request will still succeed if there "
           "are no other errors, and will only persist the last of any duplicate fields. This is the default in "
           "v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be "
           "dropped from the object, or if any duplicate fields are present. The error returned from the server "
           "will contain all unknown and duplicate fields encountered."),
    _query("force", "boolean",
           'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by '
           "other people. Force flag must be unset for non-apply patch requests."),
    _query("gracePeriodSeconds", "integer",
           "The duration in seconds before the object should be deleted. Value must be non-negative integer. The "
           "value zero indicates delete immediately. If this value is nil, the default grace period for the "
           "specified type will be used. Defaults to a per object value if not specified. zero means delete "
           "immediately."),
    _query("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean",
           "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow "
           "fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from "
           "the underlying storage successfully because of a) its data can not be transformed e.g. decryption "
           "failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer "
           "constraints, skips precondition checks, and removes the object from the storage. WARNING: This may "
           "potentially break the cluster if the workload associated with the resource being unsafe-deleted "
           "relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is "
           "false, and the user must opt in to enable it"),
    _query("labelSelector", "string",
           "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
    _query("limit", "integer",
           "limit is a maximum number of responses to return for a list call. If more items exist, the server "
           "will set the `continue` field on the list metadata to a value that can be used with the same initial "
           "query to retrieve the next set of results. Setting a limit may return fewer than the requested "
           "amount of items (up to zero items) in the event all requested objects are filtered out and clients "
           "should only use the presence of the continue field to determine whether more results are available. "
           "Servers may choose not to support the limit argument and will return all of the available results. "
           "If limit is specified and the continue field is empty, clients may assume that no more results are "
           "available. This field is not supported if watch is true.\n\nThe server guarantees that the objects "
           "returned when using continue will be identical to issuing a single list call without a limit - that "
           "is, no objects created, modified, or deleted after the first request is issued will be included in "
           "any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and "
           "ensures that a client that is using limit to receive smaller chunks of a very large result can ensure "
           "they see all possible objects. If objects are updated during a chunked list the version of the object "
           "that was present at the time the first list result was calculated is returned."),
    _query("orphanDependents", "boolean",
           "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the "
           'dependent objects be orphaned. If true/false, the "orphan" finalizer will be added to/removed from '
           "the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."),
    _query("pretty", "string",
           "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a "
           "browser or command-line HTTP tool (curl and wget)."),
    _query("propagationPolicy", "string",
           "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be "
           "set, but not both. The default policy is decided by the existing finalizer set in the "
           "metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - "
           "orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the "
           "background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."),
    _query("resourceVersion", "string",
           "resourceVersion sets a constraint on what resource versions a request may be served from. See "
           "https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\n"
           "Defaults to unset"),
    _query("resourceVersionMatch", "string",
           "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly "
           "recommended that resourceVersionMatch be set for list calls where resourceVersion is set See "
           "https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\n"
           "Defaults to unset"),
    _query("sendInitialEvents", "boolean",
           "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will "
           "begin with synthetic events to produce the current state of objects in the collection. Once all such "
           'events have been sent, a synthetic "Bookmark" event  will be sent. The bookmark will report the '
           "ResourceVersion (RV) corresponding to the set of objects, and be marked with "
           '`"k8s.io/initial-events-end": "true"` annotation. Afterwards, the watch stream will proceed as '
           "usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\n"
           "When `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The "
           "semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is "
           'interpreted as "data at least as new as the provided `resourceVersion`"\n  and the bookmark event '
           "is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by "
           "the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and "
           "the\n  bookmark event is send when the state is synced at least to the moment\n  when request "
           "started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error "
           'is returned.\n\nDefaults to true if `resourceVersion=""` or `resourceVersion="0"` (for backward '
           "compatibility reasons) and to false otherwise."),
    _query("timeoutSeconds", "integer",
           "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or "
           "inactivity."),
    _query("watch", "boolean",
           "Watch for changes to the described resources and return them as a stream of add, update, and remove "
           "notifications. Specify resourceVersion."),
)}
# PatchOptions documents fieldManager with its apply rule.
_PATCH_FIELD_MANAGER = _query("fieldManager", "string", _FIELD_MANAGER + " This field is required for apply "
                              "requests (application/apply-patch) but optional for non-apply patch types "
                              "(JsonPatch, MergePatch, StrategicMergePatch).")
# PodLogOptions (sinceTime is a *metav1.Time struct: AddObjectParams skips it).
_LOG_PARAMS = [
    _query("container", "string", "The container for which to stream logs. Defaults to only container if "
                                  "there is one container in the pod."),
    _query("follow", "boolean", "Follow the log stream of the pod. Defaults to false."),
    _query("insecureSkipTLSVerifyBackend", "boolean",
           "insecureSkipTLSVerifyBackend indicates that the apiserver should not confirm the validity of the "
           "serving certificate of the backend it is connecting to.  This will make the HTTPS connection between "
           "the apiserver and the backend insecure. This means the apiserver cannot verify the log data it is "
           "receiving came from the real kubelet.  If the kubelet is configured to verify the apiserver's TLS "
           "credentials, it does not mean the connection to the real kubelet is vulnerable to a man in the "
           "middle attack (e.g. an attacker could not intercept the actual log data coming from the real "
           "kubelet)."),
    _query("limitBytes", "integer", "If set, the number of bytes to read from the server before terminating "
                                    "the log output. This may not display a complete final line of logging, and "
                                    "may return slightly more or slightly less than the specified limit."),
    _query("previous", "boolean", "Return previous terminated container logs. Defaults to false."),
    _query("sinceSeconds", "integer", "A relative time in seconds before the current time from which to show "
                                      "logs. If this value precedes the time a pod was started, only logs since "
                                      "the pod start will be returned. If this value is in the future, no logs "
                                      "will be returned. Only one of sinceSeconds or sinceTime may be specified."),
    _query("stream", "string", 'Specify which container log stream to return to the client. Acceptable values '
                               'are "All", "Stdout" and "Stderr". If not specified, "All" is used, and both '
                               'stdout and stderr are returned interleaved. Note that when "TailLines" is '
                               'specified, "Stream" can only be set to nil or "All".'),
    _query("tailLines", "integer", "If set, the number of lines from the end of the logs to show. If not "
                                   "specified, logs are shown from the creation of the container or sinceSeconds "
                                   "or sinceTime"),
    _query("timestamps", "boolean", "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every "
                                    "line of log output. Defaults to false."),
]
_NAMESPACE = _path_param("namespace", "object name and auth scope, such as for teams and projects")
_LIST_OPTIONS = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
                 "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
_DELETE_OPTIONS = ("dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
                   "orphanDependents", "propagationPolicy")
_WRITE_OPTIONS = ("dryRun", "fieldManager", "fieldValidation")    # CreateOptions, UpdateOptions


def _q(*names: str) -> list[dict[str, Any]]:
    return [Q[n] for n in names]


# --- routes ------------------------------------------------------------------------------------


@dataclass
class Route:
    """One operation: its path, method, operation fields and every parameter it takes."""
    path: str
    method: str                       # get, put, post, delete, patch
    op: dict[str, Any]                # description, consumes, produces, tag, operationId, responses, x-*
    params: list[dict[str, Any]] = field(default_factory=list)


def to_valid_operation_id(s: str, capitalize_first: bool) -> str:
    """Drop every character but letters, '_' and inner digits; capitalise the letter after each
    dropped one: ("rbac.authorization", True) -> "RbacAuthorization", ("v1beta1", True) -> "V1beta1".
    Upstream: ToValidOperationID (apiserver/pkg/endpoints/openapi/openapi.go)."""
    out, capitalize = [], capitalize_first
    for i, c in enumerate(s):
        if c.isalpha() or c == "_" or (i and c.isdigit()):
            out.append(c.upper() if capitalize else c)
            capitalize = False
        else:
            capitalize = True
    return "".join(out)


def _group_part(group: str, capitalize: bool) -> str:
    return to_valid_operation_id(group.removesuffix(".k8s.io") if group else "core", capitalize)


def gv_id(group: str, version: str) -> str:
    """listCoreV1..., createAppsV1..., watchCoordinationV1... (GetOperationIDAndTags)."""
    return _group_part(group, True) + to_valid_operation_id(version, True)


def tag(group: str, version: str = "") -> str:
    """core_v1, apps_v1, rbacAuthorization_v1; the group alone for /apis/<group>/."""
    tag = _group_part(group, False)
    return f"{tag}_{to_valid_operation_id(version, False)}" if version else tag


def article(noun: str) -> str:
    """Upstream: GetArticleForNoun (installer.go): "a Pod", "an Event", "Endpoints" (plurals have none)."""
    if noun.endswith("s") and not noun.endswith("ss"):
        return " "
    return " an " if noun[0].lower() in "aeiou" else " a "


def _responses(*codes: tuple[str, str, dict[str, Any] | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for code, description, schema in codes:
        out[code] = {"description": description, "schema": schema} if schema else {"description": description}
    out["401"] = _UNAUTHORIZED
    return out


def _ref(def_name: str) -> dict[str, Any]:
    return {"$ref": _DEF + def_name}


def _operation(description: str, op_id: str, tag: str, responses: dict[str, Any], *, action: str = "",
               gvk: dict[str, str] | None = None, produces: list[str] = _MEDIA,
               consumes: list[str] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"description": description, "consumes": consumes or ["*/*"], "produces": produces,
                          "schemes": ["https"], "tags": [tag], "operationId": op_id, "responses": responses}
    if action:
        op["x-kubernetes-action"] = action
    if gvk:
        op["x-kubernetes-group-version-kind"] = gvk
    return op


# metrics-server's group: its OpenAPI is metrics-server's own upstream (merged by the aggregator);
# kubeplane publishes none for it.
AGGREGATED = "metrics.k8s.io"


def discovery_routes() -> list[Route]:
    """/api/, /api/v1/, /apis/, /apis/<group>/ and /apis/<group>/<version>/ (discovery documents)."""
    def route(path: str, description: str, op_id: str, tag: str, kind: str) -> Route:
        return Route(path, "get", _operation(description, op_id, tag, _responses(("200", "OK", _ref(_META + kind))),
                                             consumes=_MEDIA))
    routes = [route("/api/", "get available API versions", "getCoreAPIVersions", "core", "APIVersions"),
              route("/apis/", "get available API versions", "getAPIVersions", "apis", "APIGroupList")]
    for group in dict.fromkeys(g for g, _ in enablement.group_versions() if g and g != AGGREGATED):
        routes.append(route(f"/apis/{group}/", "get information of a group", f"get{_group_part(group, True)}APIGroup",
                            tag(group), "APIGroup"))
    for group, version in enablement.group_versions():
        if group == AGGREGATED:
            continue
        prefix = f"/apis/{group}/{version}/" if group else f"/api/{version}/"
        routes.append(route(prefix, "get available resources", f"get{gv_id(group, version)}APIResources",
                            tag(group, version), "APIResourceList"))
    return routes


def resource_routes(r: res.ResourceInfo) -> list[Route]:
    """Every route upstream's API installer registers for one resource and its subresources."""
    prefix = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
    gv, group_tag = gv_id(r.group, r.version), tag(r.group, r.version)
    gvk = {"group": r.group, "version": r.version, "kind": r.kind}
    ns, scope = ("Namespaced", [_NAMESPACE]) if r.namespaced else ("", [])
    base = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{prefix}/{r.plural}"
    item = f"{base}/{{name}}"
    name = [_path_param("name", f"name of the {r.kind}")]
    pretty = _q("pretty")
    obj, lst, status = _ref(r.definition), _ref(r.definition + "List"), _ref(_META + "Status")
    event = _ref(_META + "WatchEvent")
    deleted = obj if delete_returns_object(r) else status
    verbs, k, a = set(r.verbs), r.kind, article(r.kind)
    routes: list[Route] = []

    def add(path: str, method: str, description: str, verb: str, action: str, responses: dict[str, Any],
            params: list[dict[str, Any]], suffix: str = "", infix: str = ns, **kw: Any) -> None:
        op = _operation(description, f"{verb}{gv}{infix}{k}{suffix}", group_tag, responses, action=action, gvk=gvk, **kw)
        routes.append(Route(path, method, op, pretty + params))

    watched = "list or watch" if "watch" in verbs else "list"
    if "list" in verbs:
        add(base, "get", f"{watched} objects of kind {k}", "list", "list", _responses(("200", "OK", lst)),
            scope + _q(*_LIST_OPTIONS), produces=_WATCH_MEDIA)
    if "create" in verbs:
        add(base, "post", f"create{a}{k}", "create", "post", _created(obj), scope + [_body(r.definition)]
            + _q(*_WRITE_OPTIONS))
    if "deletecollection" in verbs:
        add(base, "delete", f"delete collection of {k}", "delete", "deletecollection",
            _responses(("200", "OK", status)), scope + [_body(_META + "DeleteOptions", False)]
            + _q(*_DELETE_OPTIONS) + _q(*(p for p in _LIST_OPTIONS if p not in ("watch", "allowWatchBookmarks"))),
            infix="Collection" + ns)
    if "get" in verbs:
        add(item, "get", f"read the specified {k}", "read", "get", _responses(("200", "OK", obj)), name + scope)
    if "update" in verbs:
        add(item, "put", f"replace the specified {k}", "replace", "put", _updated(obj),
            name + scope + [_body(r.definition)] + _q(*_WRITE_OPTIONS))
    if "patch" in verbs:
        add(item, "patch", f"partially update the specified {k}", "patch", "patch", _updated(obj),
            name + scope + _patch_params(), consumes=_patch_types(r))
    if "delete" in verbs:
        add(item, "delete", f"delete{a}{k}", "delete", "delete",
            _responses(("200", "OK", deleted), ("202", "Accepted", deleted)),
            name + scope + [_body(_META + "DeleteOptions", False)] + _q(*_DELETE_OPTIONS))
    deprecated = ". deprecated: use the 'watch' parameter with a list operation instead"
    if "watch" in verbs:
        watch_base = f"{prefix}/watch/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{prefix}/watch/{r.plural}"
        add(watch_base, "get", f"watch individual changes to a list of {k}{deprecated}.", "watch", "watchlist",
            _responses(("200", "OK", event)), scope + _q(*_LIST_OPTIONS), suffix="List", produces=_WATCH_MEDIA)
        add(f"{watch_base}/{{name}}", "get", f"watch changes to an object of kind {k}{deprecated}, filtered to a "
            "single item with the 'fieldSelector' parameter.", "watch", "watch", _responses(("200", "OK", event)),
            name + scope + _q(*_LIST_OPTIONS), produces=_WATCH_MEDIA)
    if r.namespaced and "list" in verbs:
        add(f"{prefix}/{r.plural}", "get", f"{watched} objects of kind {k}", "list", "list",
            _responses(("200", "OK", lst)), _q(*_LIST_OPTIONS), suffix="ForAllNamespaces", infix="",
            produces=_WATCH_MEDIA)
    if r.namespaced and "watch" in verbs:
        add(f"{prefix}/watch/{r.plural}", "get", f"watch individual changes to a list of {k}{deprecated}.",
            "watch", "watchlist", _responses(("200", "OK", event)), _q(*_LIST_OPTIONS),
            suffix="ListForAllNamespaces", infix="", produces=_WATCH_MEDIA)
    for sub in r.subresources:
        routes += subresource_routes(r, sub, item, scope)
    return routes


def subresource_routes(r: res.ResourceInfo, sub: res.Subresource, item: str,
                       scope: list[dict[str, Any]]) -> list[Route]:
    """/status, /scale, /binding, /log, /finalize: the parent's kind in the operationId, the
    subresource's kind in the GVK, the body and the name parameter (name of the Scale)."""
    gv, group_tag = gv_id(r.group, r.version), tag(r.group, r.version)
    group, version = (sub.group, sub.version) if sub.group else (r.group, r.version)
    gvk = {"group": group, "version": version, "kind": sub.kind}
    definition = (f"io.k8s.api.{group.split('.', 1)[0] or 'core'}.{version}.{sub.kind}" if sub.group
                  else r.definition.rsplit(".", 1)[0] + "." + sub.kind)
    obj = _ref(definition)
    op_id = ("Namespaced" if r.namespaced else "") + r.kind + sub.name.capitalize()
    path, name = f"{item}/{sub.name}", [_path_param("name", f"name of the {sub.kind}")]
    pretty = _q("pretty")
    routes = []
    if sub.name in CONNECT_PARAMS:
        return connect_routes(r, sub, item, scope, gvk)
    if sub.name == "proxy":
        return proxy_routes(r, sub, item, scope, gvk)
    if sub.name == "log":
        op = _operation(f"read log of the specified {r.kind}", f"read{gv}{op_id}", group_tag,
                        _responses(("200", "OK", {"type": "string"})), action="get", gvk=gvk,
                        produces=["text/plain"] + _MEDIA)
        return [Route(path, "get", op, pretty + name + scope + _LOG_PARAMS)]
    if "get" in sub.verbs:
        routes.append(Route(path, "get", _operation(f"read {sub.name} of the specified {r.kind}", f"read{gv}{op_id}",
                                                    group_tag, _responses(("200", "OK", obj)), action="get", gvk=gvk),
                            pretty + name + scope))
    if "update" in sub.verbs:
        routes.append(Route(path, "put", _operation(f"replace {sub.name} of the specified {r.kind}",
                                                    f"replace{gv}{op_id}", group_tag, _updated(obj), action="put", gvk=gvk),
                            pretty + name + scope + [_body(definition)] + _q(*_WRITE_OPTIONS)))
    if "patch" in sub.verbs:
        routes.append(Route(path, "patch", _operation(f"partially update {sub.name} of the specified {r.kind}",
                                                      f"patch{gv}{op_id}", group_tag, _updated(obj), action="patch",
                                                      gvk=gvk, consumes=_patch_types(r)),
                            pretty + name + scope + _patch_params()))
    if "create" in sub.verbs:
        routes.append(Route(path, "post", _operation(f"create {sub.name} of{article(r.kind)}{r.kind}",
                                                     f"create{gv}{op_id}", group_tag, _created(obj), action="post",
                                                     gvk=gvk),
                            pretty + name + scope + [_body(definition)] + _q(*_WRITE_OPTIONS)))
    return routes


# pods/attach, exec, portforward: their options' fields as query parameters (name, type, the
# field's SwaggerDoc). Upstream: k8s.io/api core/v1 types_swagger_doc_generated.go (map_PodAttachOptions,
# map_PodExecOptions, map_PodPortForwardOptions); command is []string, ports []int32: one value
# per parameter in the document.
CONNECT_PARAMS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "attach": (
        ("container", "string", "The container in which to execute the command. Defaults to only container if "
                                "there is only one container in the pod."),
        ("stderr", "boolean", "Stderr if true indicates that stderr is to be redirected for the attach call. "
                              "Defaults to true."),
        ("stdin", "boolean", "Stdin if true, redirects the standard input stream of the pod for this call. "
                             "Defaults to false."),
        ("stdout", "boolean", "Stdout if true indicates that stdout is to be redirected for the attach call. "
                              "Defaults to true."),
        ("tty", "boolean", "TTY if true indicates that a tty will be allocated for the attach call. This is passed "
                           "through the container runtime so the tty is allocated on the worker node by the "
                           "container runtime. Defaults to false.")),
    "exec": (
        ("command", "string", "Command is the remote command to execute. argv array. Not executed within a shell."),
        ("container", "string", "Container in which to execute the command. Defaults to only container if there is "
                                "only one container in the pod."),
        ("stderr", "boolean", "Redirect the standard error stream of the pod for this call."),
        ("stdin", "boolean", "Redirect the standard input stream of the pod for this call. Defaults to false."),
        ("stdout", "boolean", "Redirect the standard output stream of the pod for this call."),
        ("tty", "boolean", "TTY if true indicates that a tty will be allocated for the exec call. Defaults to "
                           "false.")),
    "portforward": (
        ("ports", "integer", "List of ports to forward Required when using WebSockets"),),
}
CONNECT_METHODS = ("get", "post")      # the streaming REST's ConnectMethods


def connect_routes(r: res.ResourceInfo, sub: res.Subresource, item: str, scope: list[dict[str, Any]],
                   gvk: dict[str, str]) -> list[Route]:
    """pods/attach, exec, portforward: connect GET and POST, the options as query parameters,
    a string out. Upstream: the installer's connect routes (AttachREST, ExecREST, PortForwardREST)."""
    gv, group_tag = gv_id(r.group, r.version), tag(r.group, r.version)
    ns = "Namespaced" if r.namespaced else ""
    params = [_path_param("name", f"name of the {sub.kind}")] + scope + [
        _query(name, typ, doc) for name, typ, doc in CONNECT_PARAMS[sub.name]]
    routes = []
    for method in CONNECT_METHODS:
        op = _operation(f"connect {method.upper()} requests to {sub.name} of {r.kind}",
                        f"connect{gv}{method.capitalize()}{ns}{r.kind}{sub.name.capitalize()}", group_tag,
                        _responses(("200", "OK", {"type": "string"})), action="connect", gvk=gvk, produces=["*/*"])
        routes.append(Route(f"{item}/{sub.name}", method, op, params))
    return routes


# The proxy options' `path` field (PodProxyOptions, ServiceProxyOptions, NodeProxyOptions SwaggerDoc).
PROXY_PATH_DOC = {
    "Pod": "Path is the URL path to use for the current proxy request to pod.",
    "Service": "Path is the part of URLs that include service endpoints, suffixes, and parameters to use for the "
               "current proxy request to service. For example, the whole request URL is http://localhost/api/v1/"
               "namespaces/kube-system/services/elasticsearch-logging/_search?q=user:kimchy. Path is "
               "_search?q=user:kimchy.",
    "Node": "Path is the URL path to use for the current proxy request to node.",
}
PROXY_METHODS = ("delete", "get", "head", "options", "patch", "post", "put")


def proxy_routes(r: res.ResourceInfo, sub: res.Subresource, item: str, scope: list[dict[str, Any]],
                 gvk: dict[str, str]) -> list[Route]:
    """<kind>/proxy and <kind>/proxy/{path}: one connect operation per HTTP method, strings in
    and out. Upstream: the installer's connect routes (ConnectMethods of ProxyREST)."""
    gv, group_tag = gv_id(r.group, r.version), tag(r.group, r.version)
    name = [_path_param("name", f"name of the {sub.kind}")]
    query = [{"uniqueItems": True, "type": "string", "description": PROXY_PATH_DOC.get(r.kind, ""), "name": "path",
              "in": "query"}]
    ns = "Namespaced" if r.namespaced else ""
    routes = []
    for path, suffix, params in ((f"{item}/proxy", "", name + scope + query),
                                 (f"{item}/proxy/{{path}}", "WithPath",
                                  name + scope + [_path_param("path", "path to the resource")] + query)):
        for method in PROXY_METHODS:
            op = _operation(f"connect {method.upper()} requests to proxy of {r.kind}",
                            f"connect{gv}{method.capitalize()}{ns}{r.kind}Proxy{suffix}", group_tag,
                            _responses(("200", "OK", {"type": "string"})), action="connect", gvk=gvk,
                            produces=["*/*"])
            routes.append(Route(path, method, op, params))
    return routes


def _created(obj: dict[str, Any]) -> dict[str, Any]:
    return _responses(("200", "OK", obj), ("201", "Created", obj), ("202", "Accepted", obj))


def _updated(obj: dict[str, Any]) -> dict[str, Any]:
    return _responses(("200", "OK", obj), ("201", "Created", obj))


def _patch_params() -> list[dict[str, Any]]:
    return [_body(_META + "Patch"), Q["dryRun"], _PATCH_FIELD_MANAGER, Q["fieldValidation"], Q["force"]]


# --- the document ------------------------------------------------------------------------------

_PATH_ITEM_ORDER = ("get", "put", "post", "delete", "options", "head", "patch")


def build_paths(routes: list[Route]) -> dict[str, dict[str, Any]]:
    """Group routes by path; parameters common to every operation of a path go to the path item.
    Upstream: buildPaths, findCommonParameters (kube-openapi pkg/builder/openapi.go)."""
    by_path: dict[str, list[Route]] = {}
    for route in routes:
        by_path.setdefault(route.path, []).append(route)
    paths: dict[str, dict[str, Any]] = {}
    for path in sorted(by_path):
        group = by_path[path]
        counts: dict[tuple[str, str], int] = {}
        data: dict[tuple[str, str], dict[str, Any]] = {}
        for route in group:
            for p in route.params:
                key = (p["name"], p["in"])
                counts[key] = counts.get(key, 0) + 1
                data[key] = p
        common = {key for key, n in counts.items() if n == len(group) and key[1] != "body"}
        item: dict[str, Any] = {}
        ops = {route.method: route for route in group}
        for method in _PATH_ITEM_ORDER:
            if method in ops:
                item[method] = _with_params(ops[method], common)
        if common:
            item["parameters"] = _sorted_params(data[key] for key in common)
        paths[path] = item
    return paths


def _with_params(route: Route, common: set[tuple[str, str]]) -> dict[str, Any]:
    """The operation with its own (non-common) parameters, placed where Go's struct puts them."""
    own = _sorted_params(p for p in route.params if (p["name"], p["in"]) not in common)
    op: dict[str, Any] = {}
    for key, value in route.op.items():
        if key == "responses" and own:
            op["parameters"] = own
        op[key] = value
    return op


def _sorted_params(params: Any) -> list[dict[str, Any]]:
    return sorted(params, key=lambda p: (p["name"], p["in"]))


def shared_parameter_name(param: dict[str, Any]) -> str:
    """`<name>-<8 characters>`: URL-safe base64 of the first 6 bytes of the FNV-1 64 hash of the
    parameter's JSON (pretty -> "pretty-tJGM1-ng"). Upstream: base64Hash (kube-openapi parameters.go)."""
    h = 0xCBF29CE484222325
    for byte in orjson.dumps(param):
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        h ^= byte
    return f"{param['name']}-{base64.urlsafe_b64encode(h.to_bytes(8, 'big')[:6]).decode()}"


def _shareable(p: dict[str, Any]) -> bool:
    """Upstream: collectSharedParameters keeps these inline: every `name` (its description names
    the kind), dryRun and fieldValidation (old kubectls look for them on the operation), and a
    body holding the kind itself."""
    if p["in"] in ("query", "path") and p["name"] == "name":
        return False
    if p["in"] == "query" and p["name"] in ("dryRun", "fieldValidation"):
        return False
    if p["in"] == "body":
        return p["schema"]["$ref"].startswith(_DEF + "io.k8s.apimachinery")
    return True


def deduplicate_parameters(paths: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Replace every shareable parameter with a $ref into the returned top-level `parameters`.
    Upstream: deduplicateParameters (kube-openapi pkg/builder/parameters.go)."""
    shared: dict[str, dict[str, Any]] = {}

    def replace(params: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for p in params:
            if _shareable(p):
                name = shared_parameter_name(p)
                shared[name] = p
                p = {"$ref": "#/parameters/" + name}
            out.append(p)
        return out

    for item in paths.values():
        for key, value in item.items():
            if key == "parameters":
                item[key] = replace(value)
            elif "parameters" in value:
                value["parameters"] = replace(value["parameters"])
    return dict(sorted(shared.items()))


# --- definitions -------------------------------------------------------------------------------

# Definitions our JSON-schema source lacks or words differently from upstream's swagger.json.
_QUANTITY_DESCRIPTION = (
    'Quantity is a fixed-point representation of a number. It provides convenient '
    'marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.\n'
    '\n'
    'The serialization format is:\n'
    '\n'
    '<quantity>        ::= <signedNumber><suffix>\n'
    '  (Note that <suffix> may be empty, from the "" case in <decimalSI>.)\n'
    '<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> <number>      '
    '    ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            ::= "+" | "-" '
    '<signedNumber>    ::= <number> | <sign><number> <suffix>          ::= <binarySI> | '
    '<decimalExponent> | <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n'
    '  (International System of units; See: http://physics.nist.gov/cuu/Units/binary.html)\n'
    '<decimalSI>       ::= m | "" | k | M | G | T | P | E\n'
    "  (Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n"
    '<decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>\n'
    '\n'
    'No matter which of the three exponent forms is used, no quantity may represent a number greater '
    'than 2^63-1 in magnitude, nor may it have more than 3 decimal places. Numbers larger or more '
    'precise will be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) This may be extended in '
    'the future if we require larger or smaller quantities.\n'
    '\n'
    'When a Quantity is parsed from a string, it will remember the type of suffix it had, and will use '
    'the same type again when it is serialized.\n'
    '\n'
    'Before serializing, Quantity will be put in "canonical form". This means that Exponent/suffix will '
    'be adjusted up or down (with a corresponding increase or decrease in Mantissa) such that:\n'
    '  a. No precision is lost\n'
    '  b. No fractional digits will be emitted\n'
    '  c. The exponent (or suffix) is as large as possible.\n'
    'The sign will be omitted unless the number is negative.\n'
    '\n'
    'Examples:\n'
    '  1.5 will be serialized as "1500m"\n'
    '  1.5Gi will be serialized as "1536Mi"\n'
    '\n'
    'Note that the quantity will NEVER be internally represented by a floating point number. That is the '
    'whole point of this exercise.\n'
    '\n'
    'Non-canonical values will still parse as long as they are well formed, but will be re-emitted in '
    "their canonical form. (So always use canonical form, or don't diff.)\n"
    '\n'
    'This format is intended to make it difficult to use these numbers without writing some sort of '
    'special handling code in the hopes that that will cause implementors to also use a fixed point '
    'implementation.'
)
_EXTRA_DEFINITIONS: dict[str, dict[str, Any]] = {
    _META + "Patch": {"description": "Patch is provided to give a concrete name and type to the Kubernetes "
                                     "PATCH request body.", "type": "object"},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
                       "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you "
                       "to have, for example, a JSON field that can accept a name or number.",
        "type": "string", "format": "int-or-string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"description": _QUANTITY_DESCRIPTION, "type": "string"},
}
# kube-openapi's Schema fields in marshalling order; extensions (x-*) follow, sorted.
_SCHEMA_ORDER = {k: i for i, k in enumerate((
    "id", "description", "type", "nullable", "format", "title", "default", "maximum", "exclusiveMaximum",
    "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
    "multipleOf", "enum", "maxProperties", "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not",
    "properties", "additionalProperties", "patternProperties", "dependencies", "additionalItems", "definitions",
    "discriminator", "readOnly", "xml", "externalDocs", "example", "$schema", "$ref"))}


def build_definitions(roots: set[str]) -> dict[str, Any]:
    """The roots and every definition they reach, as swagger 2.0 schemas, sorted by name."""
    source = definitions()
    out: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        if name in _EXTRA_DEFINITIONS:
            out[name] = _EXTRA_DEFINITIONS[name]
            continue
        found: set[str] = set()
        out[name] = convert_schema(source[name], found, top=True)
        todo.extend(found - out.keys())
    return dict(sorted(out.items()))


def convert_schema(node: dict[str, Any], refs: set[str], top: bool = False) -> dict[str, Any]:
    """A JSON-schema node as swagger 2.0: `#/$defs/` refs to `#/definitions/` (siblings such as a
    description stay beside the $ref, as upstream), `["string", "null"]` -> "string", the
    kubernetes-validate-only apiVersion/kind enums dropped, keys in kube-openapi's order."""
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "$ref":
            name = ref_name(node)
            assert name is not None
            refs.add(name)
            v = _DEF + name
        elif k == "type" and isinstance(v, list):
            v = next((t for t in v if t != "null"), "object")
        elif k in ("properties", "patternProperties", "definitions"):
            v = {p: convert_schema(_drop_enum(p, s) if top and k == "properties" else s, refs)
                 for p, s in sorted(v.items())}
        elif k in ("items", "additionalProperties", "not") and isinstance(v, dict):
            v = convert_schema(v, refs)
        elif k in ("allOf", "oneOf", "anyOf"):
            v = [convert_schema(s, refs) for s in v]
        elif k.startswith("x-"):
            v = _sorted_deep(v)
        out[k] = v
    return dict(sorted(out.items(), key=lambda kv: (_SCHEMA_ORDER.get(kv[0], len(_SCHEMA_ORDER)), kv[0])))


def _drop_enum(prop: str, schema: dict[str, Any]) -> dict[str, Any]:
    if prop in ("apiVersion", "kind") and "enum" in schema:
        return {k: v for k, v in schema.items() if k != "enum"}
    return schema


def _sorted_deep(v: Any) -> Any:
    """An extension's value as Go marshals a map[string]interface{}: keys sorted, at every level."""
    if isinstance(v, dict):
        return {k: _sorted_deep(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [_sorted_deep(x) for x in v]
    return v


def _refs_in(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEF):
            out.add(ref[len(_DEF):])
        for v in node.values():
            _refs_in(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs_in(v, out)
    return out


def routes() -> list[Route]:
    """Every route of every served resource, plus the discovery routes."""
    out = discovery_routes()
    for r in enablement.resources():
        if r.group != AGGREGATED:
            out += resource_routes(r)
    return out


def public_name(def_name: str) -> str:
    """The published name of a definition: a custom resource's ("custom.<n>.<group>.<version>.<Kind>",
    unique per CRD revision for the decoders' caches) is upstream's, the group reversed:
    "com.example.stable.v1.CronTab". Upstream: util.ToRESTFriendlyName (apiextensions builder)."""
    if not def_name.startswith("custom."):
        return def_name
    group, version, kind = def_name.split(".", 2)[2].rsplit(".", 2)
    return ".".join([*reversed(group.split(".")), version, kind])


def _with_public_names(node: Any) -> Any:
    """node with every custom resource's definition name (keys of definitions, $refs) published."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith(_DEF + "custom."):
                out[k] = _DEF + public_name(v[len(_DEF):])
            else:
                out[k] = _with_public_names(v)
        return out
    if isinstance(node, list):
        return [_with_public_names(x) for x in node]
    return node


def build_document() -> dict[str, Any]:
    """The whole swagger 2.0 document, keys in kube-openapi's marshalling order."""
    doc = _build_document()
    if any(k.startswith("custom.") for k in doc["definitions"]):
        doc = _with_public_names(doc)
        doc["definitions"] = dict(sorted((public_name(k), v) for k, v in doc["definitions"].items()))
    return doc


def _build_document() -> dict[str, Any]:
    paths = build_paths(routes())
    parameters = deduplicate_parameters(paths)
    return {
        "swagger": SWAGGER_VERSION,
        "info": INFO,
        "paths": paths,
        "definitions": build_definitions(_refs_in(paths, set()) | _refs_in(parameters, set())),
        "parameters": parameters,
        # kube-apiserver's OpenAPIConfig: SecurityDefinitions and DefaultSecurity (server/config.go).
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey",
                                                "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    }


# --- serving -----------------------------------------------------------------------------------


@dataclass
class Served:
    """The document's bytes in each form, built once; the protobuf and gzip copies on first use."""
    json: bytes
    etag: str                         # quoted upper-case hex SHA-512 of the JSON bytes
    last_modified: float              # when it was built (http.ServeContent's modtime)
    forms: dict[str, bytes] = field(default_factory=dict)

    def body(self, content_type: str, gzipped: bool) -> bytes:
        key = content_type + (";gzip" if gzipped else "")
        with _lock:
            return self._form(key, content_type, gzipped)

    def _form(self, key: str, content_type: str, gzipped: bool) -> bytes:
        if key not in self.forms:
            if gzipped:
                plain = self._form(content_type, content_type, False)
                self.forms[key] = gzip.compress(plain, compresslevel=6, mtime=0)
            elif content_type == PROTOBUF_TYPE:
                from .openapi_v2_proto import encode_document
                self.forms[key] = encode_document(orjson.loads(self.json))
            else:
                self.forms[key] = self.json
        return self.forms[key]


_lock = threading.RLock()        # one build at a time: requests arriving meanwhile wait for it


@functools.cache
def _served() -> Served:
    data = orjson.dumps(build_document())
    return Served(data, '"' + hashlib.sha512(data).hexdigest().upper() + '"', time.time())


def served() -> Served:
    with _lock:
        return _served()


def invalidate() -> None:
    """Forget the built document (call when the served resources change, e.g. a CRD is added);
    the next request rebuilds it, with a new ETag. Upstream: OpenAPIService.UpdateSpec."""
    with _lock:
        _served.cache_clear()


async def serve_async(req: Request) -> Response:
    """serve() in a worker thread: the first request builds the document (~0.1 s of CPU), which
    must not hold the event loop; later ones cost microseconds either way."""
    return await asyncio.to_thread(serve, req)


def serve(req: Request) -> Response:
    """GET /openapi/v2. Upstream: OpenAPIService.RegisterOpenAPIVersionedService (kube-openapi
    pkg/handler/handler.go) wrapped in gziphandler, answering through http.ServeContent."""
    headers = [("vary", "Accept-Encoding"), ("vary", "Accept")]
    content_type = negotiate(req.headers.get("accept", ""))
    if content_type is None:
        return Response(406, b"", "", headers)
    doc = served()
    headers.append(("etag", doc.etag))
    status = _precondition(req, doc)
    if status:
        return Response(status, b"", "", headers)
    headers.append(("last-modified", formatdate(doc.last_modified, usegmt=True)))
    gzipped = accepts_gzip(req.headers.get("accept-encoding", "")) and len(doc.body(content_type, False)) >= GZIP_MIN_SIZE
    if gzipped:
        headers.append(("content-encoding", "gzip"))
    return Response(200, doc.body(content_type, gzipped), content_type, headers)


_ACCEPTED = (("application", "json", JSON_TYPE), ("application", _PROTOBUF_DEPRECATED_SUBTYPE, PROTOBUF_TYPE),
             ("application", PROTOBUF_TYPE.split("/", 1)[1], PROTOBUF_TYPE))


def negotiate(accept: str) -> str | None:
    """The content type to answer: the first of the client's media ranges (by q, then specificity)
    that JSON or protobuf matches; None (406) if none does. An empty Accept means */*."""
    for typ, subtype in parse_accept(accept or "*/*"):
        for a_type, a_subtype, content_type in _ACCEPTED:
            if typ in (a_type, "*") and subtype in (a_subtype, "*"):
                return content_type
    return None


def parse_accept(header: str) -> list[tuple[str, str]]:
    """(type, subtype) of each media range, highest q first, then concrete before wildcards.
    Upstream: goautoneg.ParseAccept (q=0 ranges are kept, as there)."""
    clauses = []
    for part in header.split(","):
        media_range, *params = part.strip().split(";")
        sp = media_range.split("/")
        typ = sp[0].strip()
        if len(sp) == 1 and typ == "*":
            subtype = "*"
        elif len(sp) == 2:
            subtype = sp[1].strip()
        else:
            continue
        clauses.append((-_quality(params), typ == "*", subtype == "*", typ, subtype))
    clauses.sort(key=lambda c: c[:3])
    return [(c[3], c[4]) for c in clauses]


def _quality(params: list[str]) -> float:
    """A header element's q parameter (the last one given), 1 without one."""
    q = 1.0
    for param in params:
        key, eq, value = param.partition("=")
        if eq and key.strip() == "q":
            q = _float(value)
    return q


def accepts_gzip(header: str) -> bool:
    """Upstream: gziphandler acceptsGzip: "gzip" listed with q > 0."""
    for part in header.split(","):
        coding, *params = part.strip().split(";")
        if coding.strip().lower() != "gzip":
            continue
        return _quality(params) > 0
    return False


def _float(value: str) -> float:
    try:
        return float(value.strip())
    except ValueError:
        return 0.0


def _precondition(req: Request, doc: Served) -> int:
    """304 (or 412 for other methods) when If-None-Match names our ETag (or is `*`); 304 when
    If-Modified-Since is not older than the document. 0 otherwise. Upstream: http.ServeContent's
    checkIfNoneMatch (weak comparison) and checkIfModifiedSince."""
    inm = req.headers.get("if-none-match", "")
    if inm:
        for tag in inm.split(","):
            tag = tag.strip()
            if tag == "*" or tag.removeprefix("W/") == doc.etag:
                return 304 if req.method in ("GET", "HEAD") else 412
        return 0
    ims = req.headers.get("if-modified-since", "")
    if ims and req.method in ("GET", "HEAD"):
        try:
            since = parsedate_to_datetime(ims).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            return 0
        if int(doc.last_modified) <= since:
            return 304
    return 0
