"""Upstream's bootstrap policy: the default ClusterRoles, ClusterRoleBindings, the controller
roles (one per controller service account, for --use-service-account-credentials) and the
namespaced Roles and RoleBindings of kube-system and kube-public.

Upstream: ClusterRoles, ClusterRoleBindings, NamespaceRoles, NamespaceRoleBindings
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, namespace_policy.go) and
ControllerRoles, ControllerRoleBindings (controller_policy.go). Written as upstream writes it:
rules built by a builder that sorts every list (PolicyRuleBuilder.Rule), every object
labelled `kubernetes.io/bootstrapping: rbac-defaults` and annotated
`rbac.authorization.kubernetes.io/autoupdate: "true"` (addDefaultMetadata). The whole policy
equals upstream's golden files with the default feature gates (policy_test.go's testdata/,
copied to tests/apiserver/authorization/rbac/testdata/ and compared by test_golden.py): every
rule, in upstream's order, also for controllers kubeplane does not run and APIs it does not serve.
"""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

G = "rbac.authorization.k8s.io"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAPPING = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")
READ_WRITE = READ + WRITE

LEGACY, APPS, AUTOSCALING, BATCH, EXTENSIONS, POLICY = "", "apps", "autoscaling", "batch", "extensions", "policy"
NETWORKING, STORAGE, DISCOVERY = "networking.k8s.io", "storage.k8s.io", "discovery.k8s.io"
AUTHENTICATION, AUTHORIZATION, CERTIFICATES = "authentication.k8s.io", "authorization.k8s.io", "certificates.k8s.io"
COORDINATION, EVENTS, RBAC, NODE, RESOURCE = "coordination.k8s.io", "events.k8s.io", G, "node.k8s.io", "resource.k8s.io"
ADMISSIONREGISTRATION = "admissionregistration.k8s.io"


def rule(verbs: tuple[str, ...] | str, groups: tuple[str, ...] | str, resources: tuple[str, ...] | str,
         names: tuple[str, ...] = ()) -> Obj:
    """Upstream: NewRule(verbs...).Groups(...).Resources(...).Names(...).RuleOrDie() (sorted)."""
    def seq(v: tuple[str, ...] | str) -> list[str]:
        return sorted([v] if isinstance(v, str) else v)
    r: Obj = {"verbs": seq(verbs), "apiGroups": seq(groups), "resources": seq(resources)}
    if names:
        r["resourceNames"] = sorted(names)
    return r


def urls(verbs: tuple[str, ...] | str, *paths: str) -> Obj:
    """Upstream: NewRule(verbs...).URLs(paths...).RuleOrDie()"""
    return {"verbs": sorted([verbs] if isinstance(verbs, str) else verbs), "nonResourceURLs": sorted(paths)}


def events_rule() -> Obj:
    """Upstream: eventsRule()"""
    return rule(("create", "update", "patch"), (LEGACY, EVENTS), "events")


def _meta(name: str, namespace: str = "", labels: dict[str, str] | None = None) -> Obj:
    m: Obj = {"name": name}
    if namespace:
        m["namespace"] = namespace
    m["labels"] = {**BOOTSTRAPPING, **(labels or {})}
    m["annotations"] = {AUTOUPDATE: "true"}
    return m


def cluster_role(name: str, *rules: Obj, labels: dict[str, str] | None = None,
                 aggregate_from: str = "") -> Obj:
    r: Obj = {"apiVersion": f"{G}/v1", "kind": "ClusterRole", "metadata": _meta(name, labels=labels)}
    if aggregate_from:
        r["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregate_from: "true"}}]}
    r["rules"] = list(rules)
    return r


def role(namespace: str, name: str, *rules: Obj) -> Obj:
    return {"apiVersion": f"{G}/v1", "kind": "Role", "metadata": _meta(name, namespace), "rules": list(rules)}


def user(name: str) -> Obj:
    return {"apiGroup": G, "kind": "User", "name": name}


def group(name: str) -> Obj:
    return {"apiGroup": G, "kind": "Group", "name": name}


def sa(namespace: str, name: str) -> Obj:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def cluster_role_binding(name: str, role_name: str, *subjects: Obj) -> Obj:
    """Upstream: NewClusterBinding(role).Users/Groups/SAs(...).BindingOrDie()"""
    b: Obj = {"apiVersion": f"{G}/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name),
              "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": role_name}}
    if subjects:
        b["subjects"] = list(subjects)
    return b


def role_binding(namespace: str, name: str, role_name: str, *subjects: Obj) -> Obj:
    return {"apiVersion": f"{G}/v1", "kind": "RoleBinding", "metadata": _meta(name, namespace),
            "roleRef": {"apiGroup": G, "kind": "Role", "name": role_name}, "subjects": list(subjects)}


# --- the aggregated user-facing roles ---------------------------------------------------

def _view_rules() -> list[Obj]:
    return [
        rule(READ, LEGACY, ("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                            "services", "services/status", "endpoints", "persistentvolumeclaims",
                            "persistentvolumeclaims/status", "configmaps")),
        rule(READ, LEGACY, ("limitranges", "resourcequotas", "bindings", "pods/status", "resourcequotas/status",
                            "namespaces/status", "replicationcontrollers/status", "pods/log")),
        # read access to namespaces at the namespace scope means you can read *this* namespace
        rule(READ, LEGACY, "namespaces"),
        rule(READ, (LEGACY, EVENTS), "events"),
        rule(READ, DISCOVERY, "endpointslices"),
        rule(READ, APPS, ("controllerrevisions", "statefulsets", "statefulsets/scale", "statefulsets/status",
                          "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                          "deployments/status", "replicasets", "replicasets/scale", "replicasets/status")),
        rule(READ, AUTOSCALING, ("horizontalpodautoscalers", "horizontalpodautoscalers/status")),
        rule(READ, BATCH, ("jobs", "cronjobs", "cronjobs/status", "jobs/status")),
        rule(READ, EXTENSIONS, ("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                                "deployments/status", "ingresses", "ingresses/status", "replicasets",
                                "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
                                "networkpolicies")),
        rule(READ, POLICY, ("poddisruptionbudgets", "poddisruptionbudgets/status")),
        rule(READ, NETWORKING, ("networkpolicies", "ingresses", "ingresses/status")),
        # DynamicResourceAllocation (on by default since 1.34)
        rule(READ, RESOURCE, ("resourceclaims", "resourceclaims/status", "resourceclaimtemplates")),
    ]


def _edit_rules() -> list[Obj]:
    return [
        # edit can read secrets and reach into pods (upstream grants these reads to edit, not view)
        rule(READ, LEGACY, ("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets",
                            "services/proxy")),
        rule("impersonate", LEGACY, "serviceaccounts"),
        rule(WRITE, LEGACY, ("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward")),
        rule("create", LEGACY, "pods/eviction"),
        rule(WRITE, LEGACY, ("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                             "services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets")),
        rule("create", LEGACY, "serviceaccounts/token"),
        rule(WRITE, (LEGACY, EVENTS), "events"),
        rule(WRITE, APPS, ("statefulsets", "statefulsets/scale", "daemonsets", "deployments", "deployments/scale",
                           "deployments/rollback", "replicasets", "replicasets/scale")),
        rule(WRITE, AUTOSCALING, "horizontalpodautoscalers"),
        rule(WRITE, BATCH, ("jobs", "cronjobs")),
        rule(WRITE, EXTENSIONS, ("daemonsets", "deployments", "deployments/scale", "deployments/rollback",
                                 "ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale",
                                 "networkpolicies")),
        rule(WRITE, POLICY, "poddisruptionbudgets"),
        rule(WRITE, NETWORKING, ("networkpolicies", "ingresses")),
        rule(READ_WRITE, COORDINATION, "leases"),
        rule(WRITE, RESOURCE, ("resourceclaims", "resourceclaimtemplates")),
    ]


def _admin_rules() -> list[Obj]:
    return [
        rule("create", AUTHORIZATION, "localsubjectaccessreviews"),
        rule(READ_WRITE, RBAC, ("roles", "rolebindings")),
    ]


def _node_rules() -> list[Obj]:
    """Upstream: NodeRules()"""
    return [
        rule("create", AUTHENTICATION, "tokenreviews"),
        rule("create", AUTHORIZATION, ("subjectaccessreviews", "localsubjectaccessreviews")),
        rule(READ, LEGACY, "services"),
        rule(("create", "get", "list", "watch"), LEGACY, "nodes"),
        rule(("update", "patch"), LEGACY, "nodes/status"),
        rule(("update", "patch"), LEGACY, "nodes"),
        events_rule(),
        rule(READ, LEGACY, "pods"),
        rule(("create", "delete"), LEGACY, "pods"),
        rule(("update", "patch"), LEGACY, "pods/status"),
        rule("create", LEGACY, "pods/eviction"),
        rule(READ, LEGACY, ("secrets", "configmaps")),
        rule("get", LEGACY, ("persistentvolumeclaims", "persistentvolumes")),
        rule("get", LEGACY, "endpoints"),
        rule(("create", "get", "list", "watch"), CERTIFICATES, "certificatesigningrequests"),
        rule(("get", "create", "update", "patch", "delete"), COORDINATION, "leases"),
        rule("get", STORAGE, "volumeattachments"),
        rule("create", LEGACY, "serviceaccounts/token"),
        rule(("get", "update", "patch"), LEGACY, "persistentvolumeclaims/status"),
        rule(READ, STORAGE, "csidrivers"),
        rule(("get", "create", "update", "patch", "delete"), STORAGE, "csinodes"),
        rule(READ, NODE, "runtimeclasses"),
        rule("get", RESOURCE, "resourceclaims"),
        rule("deletecollection", RESOURCE, "resourceslices"),
        # ServiceAccountNodeAudienceRestriction: the kubelet reads the service account of a pod
        rule("get", LEGACY, "serviceaccounts"),
    ]


def cluster_roles() -> list[Obj]:
    """Upstream: ClusterRoles()"""
    roles = [
        cluster_role("cluster-admin", rule("*", "*", "*"), urls("*", "*")),
        cluster_role("system:discovery", urls("get", "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                              "/openapi", "/openapi/*", "/readyz", "/version", "/version/")),
        cluster_role("system:monitoring",
                     urls("get", "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*",
                          "/readyz/*", "/healthz/*", "/statusz"),
                     rule("get", LEGACY, "nodes/metrics")),
        cluster_role("system:basic-user", rule("create", AUTHORIZATION,
                                               ("selfsubjectaccessreviews", "selfsubjectrulesreviews")),
                     rule("create", AUTHENTICATION, "selfsubjectreviews")),
        cluster_role("system:public-info-viewer", urls("get", "/livez", "/readyz", "/healthz", "/version",
                                                       "/version/")),
        cluster_role("admin", aggregate_from="admin"),
        cluster_role("edit", labels={AGGREGATE_TO + "admin": "true"}, aggregate_from="edit"),
        cluster_role("view", labels={AGGREGATE_TO + "edit": "true"}, aggregate_from="view"),
        cluster_role("system:aggregate-to-admin", *_admin_rules(), labels={AGGREGATE_TO + "admin": "true"}),
        cluster_role("system:aggregate-to-edit", *_edit_rules(), labels={AGGREGATE_TO + "edit": "true"}),
        cluster_role("system:aggregate-to-view", *_view_rules(), labels={AGGREGATE_TO + "view": "true"}),
        cluster_role("system:heapster", rule(READ, LEGACY, ("events", "pods", "nodes", "namespaces")),
                     rule(READ, EXTENSIONS, "deployments")),
        cluster_role("system:node", *_node_rules()),
        cluster_role("system:node-problem-detector", rule("get", LEGACY, "nodes"),
                     rule("patch", LEGACY, "nodes/status"), events_rule()),
        cluster_role("system:kubelet-api-admin",
                     rule(READ, LEGACY, "nodes"),
                     rule("proxy", LEGACY, "nodes"),
                     rule("*", LEGACY, ("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log")),
                     # KubeletFineGrainedAuthz
                     rule("*", LEGACY, ("nodes/healthz", "nodes/pods", "nodes/configz"))),
        cluster_role("system:node-bootstrapper",
                     rule(("create", "get", "list", "watch"), CERTIFICATES, "certificatesigningrequests")),
        cluster_role("system:auth-delegator", rule("create", AUTHENTICATION, "tokenreviews"),
                     rule("create", AUTHORIZATION, "subjectaccessreviews")),
        cluster_role("system:kube-aggregator", rule(READ, LEGACY, ("services", "endpoints"))),
        cluster_role("system:kube-controller-manager",
                     events_rule(),
                     rule("create", COORDINATION, "leases"),
                     rule(("get", "update"), COORDINATION, "leases", names=("kube-controller-manager",)),
                     rule("create", LEGACY, ("secrets", "serviceaccounts")),
                     rule("delete", LEGACY, "secrets"),
                     rule("get", LEGACY, ("configmaps", "namespaces", "secrets", "serviceaccounts")),
                     rule("update", LEGACY, ("secrets", "serviceaccounts")),
                     rule("create", AUTHENTICATION, "tokenreviews"),
                     rule("create", AUTHORIZATION, "subjectaccessreviews"),
                     rule(("list", "watch"), "*", "*"),
                     rule("create", LEGACY, "serviceaccounts/token")),
        cluster_role("system:kube-dns", rule(("list", "watch"), LEGACY, ("endpoints", "services"))),
        cluster_role("system:persistent-volume-provisioner",
                     rule(("get", "list", "watch", "create", "delete"), LEGACY, "persistentvolumes"),
                     rule(("get", "list", "watch", "update"), LEGACY, "persistentvolumeclaims"),
                     rule(READ, STORAGE, "storageclasses"),
                     rule("watch", LEGACY, "events"), events_rule()),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
                     rule("create", CERTIFICATES, "certificatesigningrequests/nodeclient")),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
                     rule("create", CERTIFICATES, "certificatesigningrequests/selfnodeclient")),
        cluster_role("system:volume-scheduler",
                     rule(("get", "list", "watch", "update", "patch"), LEGACY, "persistentvolumes"),
                     rule(READ, STORAGE, "storageclasses"),
                     rule(("get", "list", "watch", "update", "patch"), LEGACY, "persistentvolumeclaims")),
        cluster_role("system:certificates.k8s.io:legacy-unknown-approver",
                     rule("approve", CERTIFICATES, "signers", names=("kubernetes.io/legacy-unknown",))),
        cluster_role("system:certificates.k8s.io:kubelet-serving-approver",
                     rule("approve", CERTIFICATES, "signers", names=("kubernetes.io/kubelet-serving",))),
        cluster_role("system:certificates.k8s.io:kube-apiserver-client-approver",
                     rule("approve", CERTIFICATES, "signers", names=("kubernetes.io/kube-apiserver-client",))),
        cluster_role("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
                     rule("approve", CERTIFICATES, "signers",
                          names=("kubernetes.io/kube-apiserver-client-kubelet",))),
        cluster_role("system:service-account-issuer-discovery",
                     urls("get", "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
                          "/openid/v1/jwks", "/openid/v1/jwks/")),
        cluster_role("system:node-proxier",
                     rule(("list", "watch"), LEGACY, ("services", "endpoints")),
                     rule(READ, LEGACY, "nodes"),
                     events_rule(),
                     rule(("list", "watch"), NETWORKING, "servicecidrs"),
                     rule(("list", "watch"), DISCOVERY, "endpointslices")),
        cluster_role("system:kube-scheduler", *_scheduler_rules()),
    ]
    return sorted(roles, key=lambda r: r["metadata"]["name"])


def _scheduler_rules() -> list[Obj]:
    """Upstream: the system:kube-scheduler ClusterRole's rules in ClusterRoles()."""
    rw = ("get", "list", "watch", "patch", "update")
    return [
        events_rule(),
        # leader election: create a lease, then only its own; coordinated leader election's candidates
        rule("create", COORDINATION, "leases"),
        rule(("get", "list", "update", "watch"), COORDINATION, "leases", names=("kube-scheduler",)),
        rule(READ_WRITE, COORDINATION, "leasecandidates"),
        # fundamental resources
        rule(READ, LEGACY, "nodes"),
        rule(("get", "list", "watch", "delete"), LEGACY, "pods"),
        rule("create", LEGACY, ("pods/binding", "bindings")),
        rule(("patch", "update"), LEGACY, "pods/status"),
        # things that select pods
        rule(READ, LEGACY, ("services", "replicationcontrollers")),
        rule(READ, (APPS, EXTENSIONS), "replicasets"),
        rule(READ, APPS, "statefulsets"),
        # things that pods use or applies to them
        rule(READ, POLICY, "poddisruptionbudgets"),
        rule(READ, LEGACY, ("persistentvolumeclaims", "persistentvolumes")),
        # the scheduler's own delegated authentication and authorization
        rule("create", AUTHENTICATION, "tokenreviews"),
        rule("create", AUTHORIZATION, "subjectaccessreviews"),
        # volume topology and limits
        rule(READ, STORAGE, "csinodes"),
        rule(READ, STORAGE, "volumeattachments"),
        # namespaceSelector of pod (anti-)affinity
        rule(READ, LEGACY, "namespaces"),
        rule(READ, STORAGE, "csidrivers"),
        rule(READ, STORAGE, "csistoragecapacities"),
        # DynamicResourceAllocation
        rule(READ, RESOURCE, "deviceclasses"),
        rule(rw, RESOURCE, "resourceclaims"),
        rule(rw, RESOURCE, "resourceclaims/status"),
        rule("update", LEGACY, "pods/finalizers"),
        rule(READ, RESOURCE, "resourceslices"),
        rule(("create", "delete"), RESOURCE, "resourceclaims"),
    ]


def cluster_role_bindings() -> list[Obj]:
    """Upstream: ClusterRoleBindings()"""
    bindings = [
        cluster_role_binding("cluster-admin", "cluster-admin", group("system:masters")),
        cluster_role_binding("system:monitoring", "system:monitoring", group("system:monitoring")),
        cluster_role_binding("system:discovery", "system:discovery", group("system:authenticated")),
        cluster_role_binding("system:basic-user", "system:basic-user", group("system:authenticated")),
        cluster_role_binding("system:public-info-viewer", "system:public-info-viewer",
                             group("system:authenticated"), group("system:unauthenticated")),
        cluster_role_binding("system:node-proxier", "system:node-proxier", user("system:kube-proxy")),
        cluster_role_binding("system:kube-controller-manager", "system:kube-controller-manager",
                             user("system:kube-controller-manager")),
        cluster_role_binding("system:kube-dns", "system:kube-dns", sa("kube-system", "kube-dns")),
        cluster_role_binding("system:kube-scheduler", "system:kube-scheduler", user("system:kube-scheduler")),
        cluster_role_binding("system:volume-scheduler", "system:volume-scheduler", user("system:kube-scheduler")),
        # the node authorizer decides for nodes: this binding has no subjects (upstream, since 1.8)
        cluster_role_binding("system:node", "system:node"),
        cluster_role_binding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
                             group("system:serviceaccounts")),
    ]
    return sorted(bindings, key=lambda b: b["metadata"]["name"])


# --- the controllers' roles (controller_policy.go) ---------------------------------------

CONTROLLER_PREFIX = "system:controller:"


def _controller_rules() -> dict[str, list[Obj]]:
    ev = events_rule()
    return {
        "attachdetach-controller": [
            rule(("list", "watch"), LEGACY, ("persistentvolumeclaims", "persistentvolumes")),
            rule(READ, LEGACY, "nodes"),
            rule(("patch", "update"), LEGACY, "nodes/status"),
            rule(("list", "watch"), LEGACY, "pods"),
            ev,
            rule(("create", "delete", "get", "list", "watch"), STORAGE, "volumeattachments"),
            rule(READ, STORAGE, "csidrivers"),
            rule(READ, STORAGE, "csinodes")],
        "certificate-controller": [
            rule(("delete", "get", "list", "watch"), CERTIFICATES, "certificatesigningrequests"),
            rule("update", CERTIFICATES, ("certificatesigningrequests/approval",
                                          "certificatesigningrequests/status")),
            # the approver only auto-approves kubelet client certificates; the signer signs all four
            rule("approve", CERTIFICATES, "signers", names=("kubernetes.io/kube-apiserver-client-kubelet",)),
            rule("sign", CERTIFICATES, "signers",
                 names=("kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown")),
            rule("create", AUTHORIZATION, "subjectaccessreviews"),
            ev],
        "clusterrole-aggregation-controller": [
            rule(("escalate", "get", "list", "patch", "update", "watch"), RBAC, "clusterroles")],
        "cronjob-controller": [
            rule(("get", "list", "update", "watch"), BATCH, "cronjobs"),
            rule(("create", "delete", "get", "list", "patch", "update", "watch"), BATCH, "jobs"),
            rule("update", BATCH, "cronjobs/status"),
            rule("update", BATCH, "cronjobs/finalizers"),
            rule(("delete", "list", "watch"), LEGACY, "pods"),
            ev],
        "daemon-set-controller": [
            rule(READ, (APPS, EXTENSIONS), "daemonsets"),
            rule("update", (APPS, EXTENSIONS), "daemonsets/status"),
            rule("update", (APPS, EXTENSIONS), "daemonsets/finalizers"),
            rule(("list", "watch"), LEGACY, "nodes"),
            rule(("create", "delete", "list", "patch", "watch"), LEGACY, "pods"),
            rule("create", LEGACY, "pods/binding"),
            rule(("create", "delete", "get", "list", "patch", "update", "watch"), APPS, "controllerrevisions"),
            ev],
        "deployment-controller": [
            rule(("get", "list", "update", "watch"), (APPS, EXTENSIONS), "deployments"),
            rule("update", (APPS, EXTENSIONS), "deployments/status"),
            rule("update", (APPS, EXTENSIONS), "deployments/finalizers"),
            rule(("create", "delete", "get", "list", "patch", "update", "watch"), (APPS, EXTENSIONS), "replicasets"),
            rule(("get", "list", "update", "watch"), LEGACY, "pods"),
            ev],
        "device-taint-eviction-controller": [
            rule(("delete", "get", "list", "watch"), LEGACY, "pods"),
            rule(("patch", "update"), LEGACY, "pods/status"),
            rule(READ, RESOURCE, "resourceclaims"),
            rule(READ, RESOURCE, "resourceslices"),
            rule(READ, RESOURCE, "deviceclasses"),
            ev],
        "disruption-controller": [
            rule(READ, (APPS, EXTENSIONS), "deployments"),
            rule(READ, (APPS, EXTENSIONS), "replicasets"),
            rule(READ, LEGACY, "replicationcontrollers"),
            rule(READ, POLICY, "poddisruptionbudgets"),
            rule(READ, APPS, "statefulsets"),
            rule("update", POLICY, "poddisruptionbudgets/status"),
            rule(("patch", "update"), LEGACY, "pods/status"),
            rule("get", "*", "*/scale"),
            ev],
        "endpoint-controller": [
            rule(READ, LEGACY, ("pods", "services")),
            rule(("create", "delete", "get", "list", "update", "watch"), LEGACY, "endpoints"),
            rule("create", LEGACY, "endpoints/restricted"),
            ev],
        "endpointslice-controller": [
            rule(READ, LEGACY, ("nodes", "pods", "services")),
            rule("update", LEGACY, "services/finalizers"),
            rule(("create", "delete", "get", "list", "update", "watch"), DISCOVERY, "endpointslices"),
            ev],
        "endpointslicemirroring-controller": [
            rule(READ, LEGACY, ("endpoints", "services")),
            rule("update", LEGACY, "services/finalizers"),
            rule("update", LEGACY, "endpoints/finalizers"),
            rule(("create", "delete", "get", "list", "update", "watch"), DISCOVERY, "endpointslices"),
            ev],
        "ephemeral-volume-controller": [
            rule(READ, LEGACY, "pods"),
            rule("update", LEGACY, "pods/finalizers"),
            rule(("create", "get", "list", "watch"), LEGACY, "persistentvolumeclaims"),
            ev],
        "expand-controller": [
            rule(("get", "list", "patch", "update", "watch"), LEGACY, "persistentvolumes"),
            rule(("patch", "update"), LEGACY, "persistentvolumeclaims/status"),
            rule(READ, LEGACY, "persistentvolumeclaims"),
            ev],
        "generic-garbage-collector": [
            rule(("delete", "get", "list", "patch", "update", "watch"), "*", "*"),
            ev],
        "horizontal-pod-autoscaler": [
            rule(READ, AUTOSCALING, "horizontalpodautoscalers"),
            rule("update", AUTOSCALING, "horizontalpodautoscalers/status"),
            rule(("get", "update"), "*", "*/scale"),
            rule(("list", "watch"), LEGACY, "pods"),
            rule(("list", "watch"), "metrics.k8s.io", "pods"),
            rule(READ, "custom.metrics.k8s.io", "*"),
            rule(READ, "external.metrics.k8s.io", "*"),
            ev],
        "job-controller": [
            rule(("get", "list", "patch", "update", "watch"), BATCH, "jobs"),
            rule("update", BATCH, "jobs/status"),
            rule("update", BATCH, "jobs/finalizers"),
            rule(("create", "delete", "list", "patch", "watch"), LEGACY, "pods"),
            ev],
        "legacy-service-account-token-cleaner": [
            rule("get", LEGACY, "configmaps", names=("kube-apiserver-legacy-service-account-token-tracking",)),
            rule(("delete", "patch"), LEGACY, "secrets")],
        "namespace-controller": [
            rule(("delete", "get", "list", "watch"), LEGACY, "namespaces"),
            rule("update", LEGACY, ("namespaces/finalize", "namespaces/status")),
            rule(("delete", "deletecollection", "get", "list", "watch"), "*", "*")],
        "node-controller": [
            rule(("delete", "get", "list", "patch", "update", "watch"), LEGACY, "nodes"),
            rule(("patch", "update"), LEGACY, "nodes/status"),
            rule(("patch", "update"), LEGACY, "pods/status"),
            rule(("delete", "get", "list", "watch"), LEGACY, "pods"),
            rule(READ, COORDINATION, "leases"),
            ev],
        "persistent-volume-binder": [
            rule(("create", "delete", "get", "list", "update", "watch"), LEGACY, "persistentvolumes"),
            rule("update", LEGACY, "persistentvolumes/status"),
            rule(("get", "list", "update", "watch"), LEGACY, "persistentvolumeclaims"),
            rule("update", LEGACY, "persistentvolumeclaims/status"),
            rule(("create", "delete", "get", "list", "watch"), LEGACY, "pods"),
            rule(READ, STORAGE, "storageclasses"),
            rule(("list", "watch"), LEGACY, "nodes"),
            ev,
            rule("watch", LEGACY, "events")],
        "pod-garbage-collector": [
            rule(("delete", "list", "watch"), LEGACY, "pods"),
            rule(READ, LEGACY, "nodes"),
            rule("patch", LEGACY, "pods/status")],
        "pv-protection-controller": [
            rule(("get", "list", "update", "watch"), LEGACY, "persistentvolumes"),
            ev],
        "pvc-protection-controller": [
            rule(("get", "list", "update", "watch"), LEGACY, "persistentvolumeclaims"),
            rule("update", LEGACY, "persistentvolumeclaims/status"),
            rule(READ, LEGACY, "pods"),
            ev],
        "replicaset-controller": [
            rule(("get", "list", "update", "watch"), (APPS, EXTENSIONS), "replicasets"),
            rule("update", (APPS, EXTENSIONS), "replicasets/status"),
            rule("update", (APPS, EXTENSIONS), "replicasets/finalizers"),
            rule(("create", "delete", "list", "patch", "watch"), LEGACY, "pods"),
            ev],
        "replication-controller": [
            rule(("get", "list", "update", "watch"), LEGACY, "replicationcontrollers"),
            rule("update", LEGACY, "replicationcontrollers/status"),
            rule("update", LEGACY, "replicationcontrollers/finalizers"),
            rule(("create", "delete", "list", "patch", "watch"), LEGACY, "pods"),
            ev],
        "resource-claim-controller": [
            rule(READ, LEGACY, "pods"),
            rule("update", LEGACY, "pods/finalizers"),
            rule(("create", "delete", "get", "list", "watch"), RESOURCE, "resourceclaims"),
            rule(("patch", "update"), RESOURCE, ("resourceclaims", "resourceclaims/status")),
            rule(("patch", "update"), LEGACY, "pods/status"),
            ev,
            rule(("patch", "update"), RESOURCE, "resourceclaims/binding")],
        "resourcequota-controller": [
            rule(("list", "watch"), "*", "*"),
            rule("update", LEGACY, "resourcequotas/status"),
            ev],
        "root-ca-cert-publisher": [
            rule(("create", "update"), LEGACY, "configmaps"),
            ev],
        "route-controller": [
            rule(("list", "watch"), LEGACY, "nodes"),
            rule("patch", LEGACY, "nodes/status"),
            ev],
        "selinux-warning-controller": [
            ev,
            rule(READ, LEGACY, "persistentvolumes"),
            rule(READ, LEGACY, "persistentvolumeclaims"),
            rule(READ, LEGACY, "pods"),
            rule(READ, STORAGE, "csidrivers")],
        "service-account-controller": [
            rule("create", LEGACY, "serviceaccounts"),
            ev],
        "service-cidrs-controller": [
            rule(("get", "list", "patch", "update", "watch"), NETWORKING, "servicecidrs"),
            rule(("patch", "update"), NETWORKING, "servicecidrs/finalizers"),
            rule(("patch", "update"), NETWORKING, "servicecidrs/status"),
            rule(READ, NETWORKING, "ipaddresses"),
            ev],
        "service-controller": [
            rule(READ, LEGACY, "services"),
            rule(("patch", "update"), LEGACY, "services/status"),
            rule(("list", "watch"), LEGACY, "nodes"),
            ev],
        "statefulset-controller": [
            rule(("list", "watch"), LEGACY, "pods"),
            rule(READ, APPS, "statefulsets"),
            rule("update", APPS, "statefulsets/status"),
            rule("update", APPS, "statefulsets/finalizers"),
            rule(("create", "delete", "get", "patch", "update"), LEGACY, "pods"),
            rule(("create", "delete", "get", "list", "patch", "update", "watch"), APPS, "controllerrevisions"),
            rule(("create", "get", "list", "watch"), LEGACY, "persistentvolumeclaims"),
            rule(("delete", "update"), LEGACY, "persistentvolumeclaims"),
            rule("update", LEGACY, "pods/finalizers"),
            ev],
        "ttl-after-finished-controller": [
            rule(("delete", "get", "list", "watch"), BATCH, "jobs"),
            ev],
        "ttl-controller": [
            rule(("list", "patch", "update", "watch"), LEGACY, "nodes"),
            ev],
        "validatingadmissionpolicy-status-controller": [
            rule(READ, ADMISSIONREGISTRATION, "validatingadmissionpolicies"),
            rule(("get", "patch", "update"), ADMISSIONREGISTRATION, "validatingadmissionpolicies/status"),
            ev],
        "volumeattributesclass-protection-controller": [
            rule(READ, LEGACY, "persistentvolumeclaims"),
            rule(READ, LEGACY, "persistentvolumes"),
            rule(("get", "list", "update", "watch"), STORAGE, "volumeattributesclasses"),
            ev],
    }


def controller_roles() -> list[Obj]:
    """Upstream: ControllerRoles()"""
    return [cluster_role(CONTROLLER_PREFIX + name, *rules) for name, rules in sorted(_controller_rules().items())]


def controller_role_bindings() -> list[Obj]:
    """Upstream: ControllerRoleBindings() — each role to its service account in kube-system."""
    return [cluster_role_binding(CONTROLLER_PREFIX + name, CONTROLLER_PREFIX + name, sa("kube-system", name))
            for name in sorted(_controller_rules())]


# --- kube-system and kube-public (namespace_policy.go) ------------------------------------

def namespace_roles() -> list[Obj]:
    """Upstream: NamespaceRoles(), by namespace then name."""
    def leader_locking(name: str) -> tuple[Obj, Obj]:
        # the configmap lock of old leader election (upstream keeps these roles; Lease locks are in
        # the system:kube-controller-manager and system:kube-scheduler ClusterRoles)
        return (rule("watch", LEGACY, "configmaps"), rule(("get", "update"), LEGACY, "configmaps", names=(name,)))
    return [
        role("kube-public", "system:controller:bootstrap-signer", rule(READ, LEGACY, "configmaps"),
             rule("update", LEGACY, "configmaps", names=("cluster-info",)), events_rule()),
        role("kube-system", "extension-apiserver-authentication-reader",
             rule(READ, LEGACY, "configmaps", names=("extension-apiserver-authentication",))),
        role("kube-system", "system::leader-locking-kube-controller-manager",
             *leader_locking("kube-controller-manager")),
        role("kube-system", "system::leader-locking-kube-scheduler", *leader_locking("kube-scheduler")),
        role("kube-system", "system:controller:bootstrap-signer", rule(READ, LEGACY, "secrets")),
        role("kube-system", "system:controller:cloud-provider",
             rule(("create", "get", "list", "watch"), LEGACY, "configmaps")),
        role("kube-system", "system:controller:token-cleaner", rule(("delete",) + READ, LEGACY, "secrets"),
             events_rule()),
    ]


def namespace_role_bindings() -> list[Obj]:
    """Upstream: NamespaceRoleBindings()"""
    return [
        role_binding("kube-public", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
                     sa("kube-system", "bootstrap-signer")),
        role_binding("kube-system", "system::extension-apiserver-authentication-reader",
                     "extension-apiserver-authentication-reader",
                     user("system:kube-controller-manager"), user("system:kube-scheduler")),
        role_binding("kube-system", "system::leader-locking-kube-controller-manager",
                     "system::leader-locking-kube-controller-manager", user("system:kube-controller-manager"),
                     sa("kube-system", "kube-controller-manager")),
        role_binding("kube-system", "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
                     user("system:kube-scheduler"), sa("kube-system", "kube-scheduler")),
        role_binding("kube-system", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
                     sa("kube-system", "bootstrap-signer")),
        role_binding("kube-system", "system:controller:cloud-provider", "system:controller:cloud-provider",
                     sa("kube-system", "cloud-provider")),
        role_binding("kube-system", "system:controller:token-cleaner", "system:controller:token-cleaner",
                     sa("kube-system", "token-cleaner")),
    ]
