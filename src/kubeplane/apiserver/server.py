"""The API server: authenticate, route, run the handler, and turn any failure into a Status.

`APIServer.handle(Request) -> Response` serves the HTTPS front end (app.py): authentication
(`authenticate`: client certificates, bearer tokens, anonymous, then impersonation; see
authentication/), then `route_trusted`, which the in-process transport (inprocess.py) calls
directly with its component's user, so behaviour is identical either way, authentication
aside: authorization (`APIServer.authorizer`) decides every request, the components' too.
Upstream: the handler chain in apiserver/pkg/server/config.go (DefaultBuildHandlerChain):
authentication -> authorization -> the API installer's routes.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Awaitable, Callable

import orjson

from ..api import errors
from ..api.resources import ResourceInfo
from ..storage.interface import Storage
from ..utils.clock import REAL_CLOCK, Clock, rfc3339
from . import admission, codec, discovery, enablement, healthz, metrics
from .handlers import common, componentstatus, ephemeralcontainers, rest, subresource_rest, subresources, watch
from .handlers.common import warning_headers
from .registry import REGISTRY, store
from .registry.apiregistration import apiservice
from .handlers.podlog import NodeConnection
from .options import ServerRunOptions
from .controlplane import kubernetesservice
from .registry.core.service.alloc import Allocators
from .registry.core.service.shared import SharedAllocations
from .registry.core.service.repair import Repair
from .request import Request, RequestInfo, Response, parse_request_info
from .authentication.authenticator import Authenticator
from .authentication.bootstrap import BootstrapTokenAuthenticator
from .authentication.impersonation import impersonate, wants_impersonation
from .authentication.legacy import last_used_writer
from .authentication.serviceaccount import JWTTokenAuthenticator
from .authentication.tokenfile import TokenFile
from .authentication.user import ANONYMOUS
from .authorization.authorizer import AlwaysAllow, Authorizer, Decide, Decision, attributes_of, forbidden

if TYPE_CHECKING:
    from ..serviceaccount.jwt import PrivateKey
    from ..serviceaccount.tokens import ServiceAccountTokens
    from .aggregator.controller import Aggregator
    from .audit.filter import Auditor

log = logging.getLogger(__name__)

KUBERNETES_VERSION = {"major": "1", "minor": "37", "gitVersion": "v1.37.0-kubeplane",
                      "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                      "buildDate": "2026-11-22T00:00:00Z", "goVersion": "go1.26.0", "compiler": "gc",
                      "platform": "linux/amd64"}
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# Paths anyone may read (upstream's system:public-info-viewer role).
PUBLIC_PATHS = ("/healthz", "/livez", "/readyz", "/version")

Handler = Callable[[], Awaitable[Response]]
# Upstream: decisionAnnotationKey, reasonAnnotationKey (endpoints/filters/authorization.go)
DECISION_ANNOTATION = "authorization.k8s.io/decision"
REASON_ANNOTATION = "authorization.k8s.io/reason"


class APIServer:
    def __init__(self, storage: Storage, *, tokens: dict[str, str] | None = None, clock: Clock = REAL_CLOCK,
                 server_address: str = "127.0.0.1:6443", options: ServerRunOptions | None = None,
                 token_file: TokenFile | None = None) -> None:
        self.storage = storage
        self.clock = clock
        self.options = options or ServerRunOptions()   # request limits and timeouts (HTTP filters, watch)
        # Who is asking (authentication/): the token file (--token-auth-file, or `tokens`: token ->
        # user name), service account tokens, anonymous; client certificates are verified by the
        # TLS server (`client_ca`: whether it asks for them, --client-ca-file).
        o = self.options
        service_accounts = JWTTokenAuthenticator(metrics.uninstrumented(storage), clock,
                                                 frozenset({o.service_account_issuer}),
                                                 o.api_audiences or (o.service_account_issuer,),
                                                 lambda: self.service_account_tokens().generator.key.public_key())
        service_accounts.secrets_writer = last_used_writer(self)     # legacy tokens' last-used label
        self.authenticator = Authenticator(clock, o.api_audiences or (o.service_account_issuer,),
                                           token_file=token_file or TokenFile.from_names(tokens or {}),
                                           service_accounts=service_accounts, anonymous=o.anonymous_auth,
                                           bootstrap=BootstrapTokenAuthenticator(metrics.uninstrumented(storage), clock)
                                           if o.enable_bootstrap_token_auth else None)
        self.client_ca = False
        # Who may do what (authorization/): every request passes it after authentication.
        self.authorizer = AlwaysAllow()
        # --audit-policy-file + --audit-log-path (audit/options.py configure): None, no auditing.
        self.audit: Auditor | None = None
        if self.options.authorization_modes != ("AlwaysAllow",):     # --authorization-mode
            from .authorization import modes
            self.authorizer = modes.new_authorizer(self, self.options.authorization_modes)
        self.server_address = server_address
        self.ready = False
        self.nodes: dict[str, NodeConnection] = {}   # node name -> its kubelet (for pods/log)
        self.health = healthz.HealthChecks(lambda: self.ready)   # /healthz, /livez, /readyz
        self.admission = admission.Chain(self)       # every write passes its plugins
        # ClusterIPs and NodePorts, repaired from the stored Services by bootstrap()
        self.service_alloc: Allocators | None = Allocators.from_flags(self.options.service_cluster_ip_range,
                                                                      self.options.service_node_port_range)
        self.service_repair: Repair | None = Repair(self.service_alloc)
        # ... stored as IPAddress objects and the RangeAllocation: shared by API servers on one storage
        self.service_alloc.shared = SharedAllocations(self, self.service_alloc)
        # Where the service account signing key comes from, called when the first token is
        # minted (`up`: the data dir's pki/sa.key, made then: an RSA key costs ~15 ms, which a
        # start-up need not pay); None: a key made in memory.
        self.service_account_key: Callable[[], PrivateKey] | None = None
        self._sa_tokens: ServiceAccountTokens | None = None
        # APIServices with spec.service, proxied once authorized (aggregator/; `up` starts it).
        self.aggregator: Aggregator | None = None

    @property
    def tokens(self) -> dict[str, str]:
        """The token file's tokens -> user names (the kubelet proxy presents the first one)."""
        return {t: u.name for t, u in self.authenticator.token_file.tokens.items()}

    @tokens.setter
    def tokens(self, names: dict[str, str]) -> None:
        self.authenticator.token_file = TokenFile.from_names(names)

    def now(self) -> str:
        return rfc3339(self.clock.now())

    def service_account_tokens(self) -> ServiceAccountTokens:
        """The signer and flags serviceaccounts/token mints with (handlers/token.py)."""
        if self._sa_tokens is None:
            # Imported on first use: a server that mints no token never loads cryptography's RSA.
            from ..serviceaccount.tokens import ServiceAccountTokens
            o = self.options
            key = self.service_account_key() if self.service_account_key is not None else None
            self._sa_tokens = ServiceAccountTokens.new(
                key, issuer=o.service_account_issuer, audiences=o.api_audiences,
                max_expiration_seconds=o.service_account_max_token_expiration,
                extend_expiration=o.service_account_extend_token_expiration)
        return self._sa_tokens

    def service_account_issuer_discovery(self, path: str) -> Response:
        """/.well-known/openid-configuration and /openid/v1/jwks (serviceaccount/openidmetadata.py)."""
        from ..serviceaccount import openidmetadata as oidc
        generator = self.service_account_tokens().generator
        if path == oidc.JWKS_PATH:
            return Response(200, oidc.jwks(generator), oidc.JWKS_CONTENT_TYPE, [("cache-control", oidc.CACHE_CONTROL)])
        return Response(200, oidc.openid_configuration(generator, self.server_address),
                        headers=[("cache-control", oidc.CACHE_CONTROL)])

    async def bootstrap(self) -> None:
        """Create the system namespaces and priority classes (upstream: the bootstrap-controller and
        scheduling/bootstrap-system-priority-classes post-start hooks)."""
        ri = subresources.namespaces_info()
        for ns in SYSTEM_NAMESPACES:
            if await self.storage.get(ri.key("", ns)) is None:
                obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                await store.create(self, store.WriteOptions(), ri, "", obj, [])
        from .authorization import modes     # rbac/bootstrap-roles, then the RBAC index's first list
        await modes.post_start(self)
        from .registry.scheduling.priorityclass import bootstrap_system_priority_classes
        if enablement.enabled("scheduling.k8s.io", "v1", "priorityclasses"):    # upstream's hook needs the API
            await bootstrap_system_priority_classes(self)
        if enablement.enabled("apiregistration.k8s.io", "v1", "apiservices"):
            await apiservice.autoregister(self)
        if self.service_repair is not None:      # every ClusterIP and NodePort found again
            await kubernetesservice.repair_services(self, self.service_repair)
        self.ready = True

    async def handle(self, req: Request) -> Response:
        """Serve one request from the network; never raises (failures become Status responses)."""
        user = self.authenticator.authenticate_now(req)
        if user is not None and user is not ANONYMOUS and not wants_impersonation(req.headers):
            req.user = user                 # a certificate's or a token file's user: no coroutine
        else:
            try:
                await self.authenticate(req)
            except errors.StatusError as e:
                return status_response(e)
        return await self.route_trusted(req)

    async def route_trusted(self, req: Request, info: RequestInfo | None = None) -> Response:
        """Serve an already-authenticated request (the in-process transport's entry), and count
        it in the request metrics."""
        if info is None:
            info = parse_request_info(req)
        if self.audit is not None and req.audit is None:      # audit/filter.py: comes back here
            return await self.audit.serve(req, info)
        started = time.perf_counter()               # for the latency metric only
        try:
            self.authorize(req, info)
            resp = await self.route(req, info)
        except errors.StatusError as e:
            resp = status_response(e)
        except Exception as e:                     # a bug: log it, never leak a traceback
            log.exception("internal error serving %s %s", req.method, req.path)
            if req.audit is not None:
                req.audit.set_panic(e)             # the Panic stage
            resp = status_response(errors.InternalError(repr(e)))
        return metrics.monitor_request(req, info, resp, time.perf_counter() - started)

    async def authenticate(self, req: Request) -> None:
        """Set req.user: the authenticators' user (401 if credentials fail), impersonation
        applied (403 if refused). Upstream: WithAuthentication, then WithImpersonation."""
        user = await self.authenticator.authenticate(req)
        if user is ANONYMOUS and not self.anonymous_may_reach(req):     # before impersonation: no way around it
            raise errors.Unauthorized()
        req.user = user              # the requester: a refused impersonation's audit event names it
        if wants_impersonation(req.headers):
            impersonated = impersonate(req, user, self.authorizer)
            if impersonated is not None:
                req.impersonated_by, req.user = user, impersonated

    def anonymous_may_reach(self, req: Request) -> bool:
        """Under RBAC (`up`'s default) the authorizer decides for anonymous requests like any
        other. With AlwaysAllow (unit tests' servers, or --authorization-mode=AlwaysAllow), not
        upstream but secure by default: an anonymous request reaches only the public paths
        (upstream's system:public-info-viewer) on a server that has credentials (a token or a
        client CA); a test server without any is open."""
        if not isinstance(self.authorizer, AlwaysAllow):
            return True
        if not self.authenticator.token_file.tokens and not self.client_ca:
            return True
        return req.path.rstrip("/") in PUBLIC_PATHS or req.path.startswith(PUBLIC_PATHS)

    @property
    def authorizer(self) -> Authorizer:
        return self._authorizer

    @authorizer.setter
    def authorizer(self, z: Authorizer) -> None:
        self._authorizer = z
        self._decide: Decide | None = getattr(z, "decide", None)

    def authorize(self, req: Request, info: RequestInfo) -> None:
        """403 unless the authorizer allows the request: its decide() when it can answer
        without Attributes (authorizer.py Decide), else its authorize(). Upstream:
        WithAuthorization (apiserver/pkg/endpoints/filters/authorization.go)."""
        field_selector = req.query.get("fieldSelector", "") if req.query else ""
        decide = self._decide
        result = decide(req.user, info, req.path, field_selector) if decide is not None else None
        if result is None:
            result = self._authorizer.authorize(attributes_of(req.user, info, req.path, field_selector))
        decision, reason = result
        if req.audit is not None:                  # upstream's audit annotations of the decision
            req.audit.add_annotation(DECISION_ANNOTATION, "allow" if decision is Decision.ALLOW else "forbid")
            req.audit.add_annotation(REASON_ANNOTATION, reason)
        if decision is not Decision.ALLOW:
            raise forbidden(attributes_of(req.user, info, req.path, field_selector), reason)

    async def route(self, req: Request, info: RequestInfo) -> Response:
        if (agg := self.aggregator) is not None and agg.backends:           # aggregated APIs (aggregator/)
            if (backend := agg.backend_for(info)) is not None:
                return await agg.serve(req, info, backend)
            if (merged := agg.discovery_response(req, info)) is not None:
                return merged
        if info.is_resource_request:
            resp = await self.route_resource(req, info)
            if (d := REGISTRY.lookup(info.group, info.version, info.resource)) and d.deprecation_warning:
                resp.headers[:0] = warning_headers([d.deprecation_warning])     # first, as upstream
            return resp
        if req.path == "/metrics":
            return await metrics.render(self.storage)
        if req.path == "/openapi/v2":
            from . import openapi_v2         # built on first request, in a thread; not at start-up
            return await openapi_v2.serve_async(req)
        return self.route_non_resource(req, info)

    def route_non_resource(self, req: Request, info: RequestInfo) -> Response:
        path = req.path.rstrip("/") or "/"
        parts = info.parts
        if path.startswith(("/healthz", "/livez", "/readyz")) and (health := self.health.serve(path, req.query)):
            return health
        if path == "/version":
            return Response(200, orjson.dumps(KUBERNETES_VERSION))
        if path in ("/.well-known/openid-configuration", "/openid/v1/jwks"):
            return self.service_account_issuer_discovery(path)
        if path in ("/api", "/apis"):
            accept = req.headers.get("accept", "")
            if discovery.wants_aggregated(accept):
                return Response(200, discovery.aggregated(path == "/api"), discovery.AGGREGATED_CT,
                                [("vary", "Accept")])
            body = discovery.api_versions(self.server_address) if path == "/api" else discovery.api_group_list()
            return Response(200, body, headers=[("vary", "Accept")])
        if len(parts) == 2 and parts[0] == "api":
            body = discovery.api_resource_list("", parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            body = discovery.api_resource_list(parts[1], parts[2])
        elif len(parts) == 2 and parts[0] == "apis":
            body = discovery.api_group(parts[1])
        elif parts[:2] == ("openapi", "v3"):
            return self.openapi(req, "/".join(parts[2:]))
        else:
            body = None
        if body is None:
            raise errors.StatusError(404, "NotFound", "the server could not find the requested resource",
                                     {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]})
        return Response(200, body)

    def openapi(self, req: Request, path: str) -> Response:
        from . import openapi
        if not path:
            return Response(200, orjson.dumps(openapi.openapi_index()))
        doc = openapi.openapi_document(path)
        if doc is None:
            raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
        return Response(200, doc, headers=[("etag", f'"{openapi.openapi_hash(path)}"')])

    async def route_resource(self, req: Request, info: RequestInfo) -> Response:
        ri = REGISTRY.lookup(info.group, info.version, info.resource)
        if ri is None or not enablement.enabled(info.group, info.version, info.resource):   # --runtime-config
            raise errors.StatusError(404, "NotFound", "the server could not find the requested resource",
                                     {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]})
        if not ri.namespaced and info.namespace:
            raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
        if info.subresource:
            return await self.route_subresource(req, info, ri)
        ns, name = info.namespace, info.name
        if ri.namespaced and not ns and info.verb not in ("list", "watch"):
            if info.verb == "create" or name:
                raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
        verb = info.verb
        if verb not in ri.verbs:
            raise errors.MethodNotSupported(ri.group, ri.plural, verb)
        if verb in _OPTIONS_KINDS:
            validate_options(req, verb, ri)
        if ri.group == "metrics.k8s.io":                                 # read from the kubelets, not stored
            from . import metricsapi
            return await metricsapi.serve(self, req, ri, verb, ns, name)
        if ri.plural == "componentstatuses" and not ri.group:          # probed, not stored
            return await (componentstatus.get(self, req, ri, name) if verb == "get" else componentstatus.list_(self, req, ri))
        if verb == "get":
            return await rest.get(self, req, ri, ns, name)
        if verb == "list":
            return await rest.list_(self, req, ri, ns)
        if verb == "watch":
            return await watch.watch(self, req, ri, ns, name)
        if verb == "create":
            if name:
                raise errors.MethodNotSupported(ri.group, ri.plural, "create")
            if ri.plural == "bindings" and not ri.group:               # pods/binding by another path
                return await subresources.create_binding(self, req, subresources.pods_info(), ns, "", legacy=ri)
            return await rest.create(self, req, ri, ns)
        if verb == "update":
            return await rest.update(self, req, ri, ns, name)
        if verb == "patch":
            return await rest.patch(self, req, ri, ns, name)
        if verb == "delete":
            return await rest.delete(self, req, ri, ns, name)
        if verb == "deletecollection":
            return await rest.delete_collection(self, req, ri, ns)
        raise errors.MethodNotSupported(ri.group, ri.plural, verb or req.method)

    async def route_subresource(self, req: Request, info: RequestInfo, ri: ResourceInfo) -> Response:
        """The handler the subresource names (Subresource.handler, handlers/subresource_rest.py):
        404 for a subresource the resource does not have, 405 for a verb it does not serve."""
        sub = ri.subresource(info.subresource)
        if sub is None:
            raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
        verbs = subresource_rest.REST.get(sub.handler or sub.name)
        serve = verbs.get(info.verb) if verbs is not None and (info.verb in sub.verbs or (
            not info.verb and sub.name == "proxy")) else None    # OPTIONS: verb "" (upstream's RequestInfo)
        if serve is None:
            raise errors.MethodNotSupported(ri.group, f"{ri.plural}/{sub.name}", info.verb)
        if info.verb in _OPTIONS_KINDS and (sub.handler or sub.name) not in ("proxy", "connect"):
            validate_options(req, info.verb, ri, sub.handler or sub.name)   # a connect (exec, proxy) has none
        return await serve(self, req, ri, info.namespace, info.name, sub.name)


def _patch_types(ri: ResourceInfo, handler: str) -> tuple[str, ...]:
    """The patch types a PATCH of the resource or its subresource handler takes (what its
    handler answers 415 for otherwise): /scale and /ephemeralcontainers take no apply, a custom
    resource no strategic merge patch."""
    if handler == "scale":
        return rest.PATCH_TYPES[:3]
    if handler == "ephemeralcontainers":
        return ephemeralcontainers.PATCH_TYPES
    types: tuple[str, ...] = rest.PATCH_TYPES
    if handler == "customscale" or not getattr(ri, "strategic_merge", True):
        types = tuple(t for t in types if t != rest.STRATEGIC_MERGE_PATCH)
    return types


_OPTIONS_KINDS = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}


def validate_options(req: Request, verb: str, ri: ResourceInfo, handler: str = "") -> None:
    """A write's CreateOptions, UpdateOptions or PatchOptions from its query, validated before
    its body is read (common.validate_write_options). A patch of a content type the resource
    (or its subresource's handler) does not take is left to that handler: upstream's
    PatchResource answers that 415 first (handlers/patch.go)."""
    patch_type = ""
    if verb == "patch":
        patch_type = codec.media_type(req.headers)
        if patch_type not in _patch_types(ri, handler):
            return
    elif not req.query:
        return
    common.validate_write_options(req, _OPTIONS_KINDS[verb], patch_type)


def status_response(err: errors.StatusError) -> Response:
    """The error's Status; one that asks the client to wait (details.retryAfterSeconds, e.g. a
    refused eviction) also sets Retry-After, as upstream's ErrorNegotiated."""
    resp = Response(err.code, orjson.dumps(err.status()))
    if err.details and (after := err.details.get("retryAfterSeconds")):
        resp.headers.append(("retry-after", str(after)))
    return resp
