"""serviceaccounts/token: mint a service account token (authentication.k8s.io/v1 TokenRequest).

    POST /api/v1/namespaces/NS/serviceaccounts/NAME/token   (kubectl create token NAME)

The answer (201) is the TokenRequest with its defaults (expirationSeconds 3600, audiences the
API server's --api-audiences, else its --service-account-issuer), the service account's name,
namespace and uid in its metadata, and status.token (a JWT, serviceaccount/jwt.py) and
status.expirationTimestamp. Nothing is stored. A token bound to a Pod (with the pod's node in
its claims), a Secret or a Node names that object, which must exist (and have the uid given);
--service-account-max-token-expiration shortens a longer request with a warning; a pod-bound
token for the API server's audiences asking for 3607 s (the ServiceAccount admission plugin's
projected volume) is valid for a year, its `warnafter` at the hour
(--service-account-extend-token-expiration, on by default).

Tokens for webhooks (a ValidatingWebhookConfiguration / MutatingWebhookConfiguration bound
object, alpha upstream) are refused as upstream does with its gate off.

Upstream: TokenREST.Create (pkg/registry/core/serviceaccount/storage/token.go),
SetDefaults_TokenRequestSpec (pkg/apis/authentication/v1/defaults.go).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors
from ...api.resources import ResourceInfo, lookup
from ...api.validation.authentication import WEBHOOK_KINDS, validate_token_request
from ...serviceaccount import claims as sa_claims
from ...utils.clock import rfc3339
from .. import admission, codec, objects
from ..objects import Obj
from ..registry import store
from ..request import Request, Response
from . import common

if TYPE_CHECKING:
    from ..server import APIServer

GROUP = "authentication.k8s.io"
KIND = "TokenRequest"
DEFINITION = "io.k8s.api.authentication.v1.TokenRequest"
DEFAULT_EXPIRATION_SECONDS = 60 * 60       # SetDefaults_TokenRequestSpec


def _info(group: str, plural: str) -> ResourceInfo:
    ri = lookup(group, "v1", plural)
    assert ri is not None
    return ri


async def create_token(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    """Upstream: the create handler (decode, default, admit) then TokenREST.Create."""
    tr, warnings = codec.decode_typed(req.headers, req.body, DEFINITION, KIND, "v1", common.field_validation(req))
    objects.check_type_meta(tr, _TOKEN_REQUEST)
    meta, spec = _object(tr, "metadata"), _object(tr, "spec")
    objects.check_namespace_matches(tr, ns)
    if spec.get("expirationSeconds") is None:
        spec["expirationSeconds"] = DEFAULT_EXPIRATION_SECONDS
    opts = common.write_options(req)
    attrs = store.attributes(opts, ri, admission.CREATE, ns, name, tr, None, "token", KIND, warnings)
    await api.admission.admit(attrs)
    if meta.get("name") and meta["name"] != name:
        raise _invalid(name, errors.invalid("metadata.name", meta["name"], "must match the service account name if specified"))
    sa = await _get(api, _info("", "serviceaccounts"), ns, name)
    sa_meta = sa["metadata"]
    if meta.get("uid") and meta["uid"] != sa_meta.get("uid"):
        raise errors.Conflict(GROUP, KIND, name, f"the UID in the token request ({meta['uid']}) does not match "
                                                 f"the UID of the service account ({sa_meta.get('uid')})")
    tokens = api.service_account_tokens()
    if not spec.get("audiences"):
        spec["audiences"] = list(tokens.audiences)
    meta.update(name=name, namespace=ns, uid=sa_meta.get("uid"))
    now = api.clock.now()
    meta["creationTimestamp"] = rfc3339(now)
    tr.pop("status", None)
    if errs := validate_token_request(tr):
        raise errors.Invalid(GROUP, KIND, "", errs)
    await api.admission.validate(attrs)
    pod, secret, node = await _bound_objects(api, ns, name, spec.get("boundObjectRef"))
    exp = spec["expirationSeconds"]
    if tokens.max_expiration_seconds and exp > tokens.max_expiration_seconds:
        warnings.append(f"requested expiration of {exp} seconds shortened to {tokens.max_expiration_seconds} seconds")
        exp = spec["expirationSeconds"] = tokens.max_expiration_seconds
    token_exp, warn_after = exp, 0
    if (tokens.extend_expiration and pod is not None and exp == sa_claims.WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS
            and set(spec["audiences"]) <= set(tokens.audiences)):
        token_exp, warn_after = tokens.max_extended_expiration_seconds, exp
    c = sa_claims.claims(sa, pod, secret, node, token_exp, warn_after, spec["audiences"], now)
    tr["status"] = {"token": tokens.generator.generate_token(c),
                    "expirationTimestamp": rfc3339(now + exp)}
    return Response(201, orjson.dumps(tr), headers=common.warning_headers(warnings))


_TOKEN_REQUEST = ResourceInfo(GROUP, "v1", KIND, "tokenrequests", "tokenrequest", True, DEFINITION)


def _object(tr: Obj, key: str) -> Obj:
    """tr[key], made {} when absent or null (Go decodes both to the zero struct)."""
    value = tr.get(key)
    if value is None:
        value = tr[key] = {}
    if not isinstance(value, dict):
        raise errors.BadRequest(f"{key} must be an object")
    return value


def _invalid(name: str, err: errors.FieldError) -> errors.Invalid:
    return errors.Invalid(GROUP, KIND, name, [err])


async def _get(api: APIServer, ri: ResourceInfo, ns: str, name: str) -> Obj:
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound(ri.group, ri.plural, name)
    return kv.obj


async def _bound_objects(api: APIServer, ns: str, name: str,
                         ref: Any) -> tuple[Obj | None, Obj | None, Obj | None]:
    """(pod, secret, node) the token is bound to, checked as upstream's TokenREST.Create does."""
    if not ref:
        return None, None, None
    api_version, kind, ref_name = ref.get("apiVersion") or "", ref.get("kind") or "", ref.get("name") or ""
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    pod = secret = node = None
    if group == "" and kind == "Pod":
        pod = await _get(api, _info("", "pods"), ns, ref_name)
        if name != (pod.get("spec") or {}).get("serviceAccountName"):
            raise errors.BadRequest(f"cannot bind token for serviceaccount {_go_q(name)} to pod running with "
                                    "different serviceaccount name.")
        uid = pod["metadata"].get("uid")
        if node_name := (pod.get("spec") or {}).get("nodeName"):
            kv = await api.storage.get(_info("", "nodes").key("", node_name))
            # A missing node still puts its name in the claims (upstream: NotFound -> name only).
            node = kv.obj if kv is not None else {"metadata": {"name": node_name}}
    elif group == "" and kind == "Node":
        node = await _get(api, _info("", "nodes"), "", ref_name)
        uid = node["metadata"].get("uid")
    elif group == "" and kind == "Secret":
        secret = await _get(api, _info("", "secrets"), ns, ref_name)
        uid = secret["metadata"].get("uid")
    elif api_version == "admissionregistration.k8s.io/v1" and kind in WEBHOOK_KINDS:
        raise errors.BadRequest(f"cannot bind token to object of type {_gvk_string(api_version, kind)} "
                                "(feature gate APIServerWebhookAuthenticationToken is disabled)")
    else:
        raise errors.BadRequest(f"cannot bind token to object of type {_gvk_string(api_version, kind)}")
    if ref.get("uid") and uid != ref["uid"]:
        raise errors.Conflict(group, kind, ref_name, f"the UID in the bound object reference ({ref['uid']}) does "
                                                     "not match the UID in record. The object might have been "
                                                     "deleted and then recreated")
    return pod, secret, node


def _gvk_string(api_version: str, kind: str) -> str:
    """schema.GroupVersionKind.String(): "/v1, Kind=ConfigMap", "apps/v1, Kind=Deployment"."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _go_q(s: str) -> str:
    return errors.go_quote(s)
