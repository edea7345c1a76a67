"""The API server's run options: request limits and timeouts, with upstream's flag defaults.

Upstream: ServerRunOptions (apiserver/pkg/server/options/server_run_options.go); the defaults
come from NewConfig (apiserver/pkg/server/config.go). The HTTP server's own limits (header
timeout, idle timeout, header size) are not flags upstream: see serving.py.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerRunOptions:
    # --max-requests-inflight: read-only (get, list) requests served at once; 0 = no limit.
    max_requests_inflight: int = 400
    # --max-mutating-requests-inflight: every other verb; 0 = no limit.
    max_mutating_requests_inflight: int = 200
    # --request-timeout (seconds, default 1m0s): the longest a non-long-running request may
    # take; a client's ?timeout= can only shorten it.
    request_timeout: float = 60.0
    # --min-request-timeout (whole seconds): a watch without timeoutSeconds lasts a random
    # time in [min, 2*min); 0 means such a watch never times out.
    min_request_timeout: int = 1800
    # --service-cluster-ip-range: the CIDR (or an IPv4 and an IPv6 CIDR, comma-separated) that
    # Services' ClusterIPs come from; the first IP is the `kubernetes` Service's.
    service_cluster_ip_range: str = "10.96.0.0/12"
    # --service-node-port-range: the ports NodePort and LoadBalancer Services are given.
    service_node_port_range: str = "30000-32767"
    # --admission-control-config-file: an AdmissionConfiguration (apiserver.config.k8s.io/v1)
    # whose plugins[] entries configure admission plugins (PodSecurity reads its own).
    admission_control_config_file: str | None = None
    # --disable-admission-plugins: plugins left out of the chain (every other one runs, in
    # upstream's order). In-process test servers without a controller-manager leave out
    # ServiceAccount, whose "default" service account only the controller creates.
    disable_admission_plugins: frozenset[str] = frozenset()
    # Service account tokens (serviceaccount/tokens.py): --service-account-issuer, --api-audiences
    # (empty: the issuer), --service-account-max-token-expiration (seconds; 0: no limit) and
    # --service-account-extend-token-expiration.
    service_account_issuer: str = "https://kubernetes.default.svc.cluster.local"
    api_audiences: tuple[str, ...] = ()
    service_account_max_token_expiration: int = 0
    service_account_extend_token_expiration: bool = True
    # --anonymous-auth: a request without credentials is system:anonymous (else a 401).
    anonymous_auth: bool = True
    # --enable-bootstrap-token-auth: bootstrap token Secrets in kube-system authenticate
    # (authentication/bootstrap.py); upstream's default false, kubeadm's (and `up`'s) true.
    enable_bootstrap_token_auth: bool = False
    # --authorization-mode: the authorizers in order (authorization/modes.py); upstream's
    # default AlwaysAllow, kubeadm's (and `up`'s) Node,RBAC.
    authorization_modes: tuple[str, ...] = ("AlwaysAllow",)

    def __post_init__(self) -> None:
        """Upstream: ServerRunOptions.Validate — the same messages."""
        if self.max_requests_inflight < 0:
            raise ValueError("--max-requests-inflight can not be negative value")
        if self.max_mutating_requests_inflight < 0:
            raise ValueError("--max-mutating-requests-inflight can not be negative value")
        if self.request_timeout < 0:
            raise ValueError("--request-timeout can not be negative value")
        if self.min_request_timeout < 0:
            raise ValueError("--min-request-timeout can not be negative value")
        # Upstream: kube-apiserver's completion of its options (cmd/kube-apiserver/app/server.go)
        if self.service_account_max_token_expiration and not 3600 <= self.service_account_max_token_expiration <= 1 << 32:
            raise ValueError("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds")
