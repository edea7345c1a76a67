"""--use-service-account-credentials for `kubeplane controller-manager`: each controller's
requests carry a token of its own kube-system service account (system:serviceaccount:
kube-system:<name>, bound by the bootstrap system:controller:<name> roles), minted through the
TokenRequest API with the controller-manager's credential and renewed before it expires; the
controller-manager's own credential (its client certificate) is not sent with them.

Upstream: DynamicControllerClientBuilder and tokenSourceImpl
(staging/src/k8s.io/controller-manager/pkg/clientbuilder/client_builder_dynamic.go): the
kubeconfig's client certificate taken off, a token of 3600 s used until 20 % of its life is
left (at least 10 minutes of life counted), through client-go's cached token source; a 401
resets it (ResettableTokenSourceWrapTransport).
"""
from __future__ import annotations

import asyncio
import logging
import pathlib
from typing import Any

import orjson

from ..api import errors
from ..client.clientset import Clientset
from ..client.rest import raise_for_status
from ..utils.clock import REAL_CLOCK, Clock, parse_rfc3339

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
EXPIRATION_SECONDS = 3600          # upstream: defaultExpirationSeconds
LEEWAY_PERCENT = 20                # upstream: defaultLeewayPercent
MIN_LIFETIME = 600.0               # a shorter lifetime is taken for clock skew and counted as 10 min
BACKOFF = (0.5, 1.0, 2.0)          # upstream: 4 tries, 500 ms doubling


class ServiceAccountTokenSource:
    """A service account's token, asked for again once 80 % of its life has passed.
    Upstream: tokenSourceImpl behind transport.NewCachedTokenSource."""

    def __init__(self, root: Clientset, name: str, *, namespace: str = NAMESPACE, clock: Clock = REAL_CLOCK,
                 expiration_seconds: int = EXPIRATION_SECONDS) -> None:
        self.root, self.name, self.namespace, self.clock = root, name, namespace, clock
        self.expiration_seconds = expiration_seconds
        self._token = ""
        self._expiry = 0.0
        self._lock = asyncio.Lock()

    async def token(self) -> str:
        if self._token and self.clock.now() < self._expiry:
            return self._token
        async with self._lock:                 # one TokenRequest for every request waiting on it
            if not (self._token and self.clock.now() < self._expiry):
                self._token, self._expiry = await self._fetch()
            return self._token

    def reset(self) -> None:
        self._expiry = 0.0

    async def _fetch(self) -> tuple[str, float]:
        """Upstream: tokenSourceImpl.Token"""
        last: Exception | None = None
        for delay in (*BACKOFF, None):
            try:
                await get_or_create_service_account(self.root, self.namespace, self.name)
                status = await self._create_token()
                break
            except (errors.StatusError, OSError, KeyError, ValueError) as err:
                last = err
                log.warning("get token failed: %s", err)
                if delay is None:
                    raise RuntimeError(f"failed to get token for {self.namespace}/{self.name}: {last}") from None
                await self.clock.sleep(delay)
        now = self.clock.now()
        lifetime = max(parse_rfc3339(status["expirationTimestamp"]) - now, MIN_LIFETIME)
        return status["token"], now + lifetime - lifetime * LEEWAY_PERCENT / 100

    async def _create_token(self) -> dict[str, Any]:
        """POST serviceaccounts/<name>/token: the TokenRequest's status."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": self.expiration_seconds}}
        resp = await self.root.transport.request(
            "POST", f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{self.name}/token", None, orjson.dumps(body))
        raise_for_status(resp)
        return dict(orjson.loads(resp.body)["status"])


async def get_or_create_service_account(root: Clientset, namespace: str, name: str) -> None:
    """Upstream: getOrCreateServiceAccount (which also creates kube-system if missing)."""
    sas = root.core_v1().serviceaccounts(namespace)
    try:
        await sas.get(name)
        return
    except errors.NotFound:
        pass
    try:
        await sas.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}})
    except errors.AlreadyExists:
        pass


class ServiceAccountClients:
    """One clientset per controller, each over HTTPS without the kubeconfig's own credential
    (upstream's AnonymousClientConfig) and with its service account's token. The clientset
    that mints the tokens is the kubeconfig's (the controller-manager's own)."""

    def __init__(self, kubeconfig: pathlib.Path, *, user_agent: str, clock: Clock = REAL_CLOCK) -> None:
        self.kubeconfig, self.user_agent, self.clock = kubeconfig, user_agent, clock
        self.root: Clientset | None = None
        self.clients: dict[str, Clientset] = {}

    def client(self, name: str) -> Clientset:
        """Upstream: SAControllerClientBuilder.ClientOrDie(name)"""
        import base64

        from ..client.transport import HTTPTransport, load_kubeconfig
        cs = self.clients.get(name)
        if cs is not None:
            return cs
        if self.root is None:
            self.root = Clientset(HTTPTransport.from_kubeconfig(self.kubeconfig, user_agent=self.user_agent))
        cluster, _ = load_kubeconfig(self.kubeconfig)
        ca = cluster.get("certificate-authority-data")
        ca_data = base64.b64decode(ca) if ca else (
            (self.kubeconfig.parent / cluster["certificate-authority"]).read_bytes()
            if cluster.get("certificate-authority") else None)
        source = ServiceAccountTokenSource(self.root, name, clock=self.clock)
        cs = self.clients[name] = Clientset(HTTPTransport(cluster["server"], ca_data=ca_data,
                                                          user_agent=f"{self.user_agent}/{name}", token_source=source))
        return cs

    async def close(self) -> None:
        for cs in self.clients.values():
            await cs.close()
        if self.root is not None:
            await self.root.close()
