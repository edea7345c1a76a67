"""The Node authorizer, with upstream's cases (plugin/pkg/auth/authorizer/node/node_authorizer_test.go
TestAuthorizer, graph_test.go) over a graph fed from a memory store: what pods bound to a node
use, it may read; anything else, no opinion with upstream's reason."""
from __future__ import annotations

from typing import Any, AsyncIterator

import pytest

from kubeplane.apiserver.authentication.user import UserInfo, authenticated, component
from kubeplane.apiserver.authorization.authorizer import Attributes, Decision, Union
from kubeplane.apiserver.authorization.node import NodeAuthorizer, node_identity
from kubeplane.apiserver.authorization.node.graph import CONFIGMAP, NODE, POD, SECRET, Graph
from kubeplane.apiserver.authorization.node.rules import NODE_RULES, Rules
from kubeplane.storage import new_storage

ALLOW, NO = Decision.ALLOW, Decision.NO_OPINION
NODE0 = component("system:node:node0")


def pod(name: str, node: str, ns: str = "ns0", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}], **spec}}


def uses(node: str, i: int) -> dict[str, Any]:
    """Pod i on node: one of each kind of reference (upstream's generate(): per-pod and shared)."""
    return pod(f"pod{i}-{node}", node, serviceAccountName=f"svcacct{i}-{node}",
               imagePullSecrets=[{"name": f"pull{i}-{node}"}],
               containers=[{"name": "c", "image": "i",
                            "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": f"env-secret{i}-{node}",
                                                                                 "key": "k"}}},
                                    {"name": "F", "valueFrom": {"configMapKeyRef": {"name": f"env-cm{i}-{node}",
                                                                                    "key": "k"}}}],
                            "envFrom": [{"secretRef": {"name": "shared-secret"}}]}],
               ephemeralContainers=[{"name": "debug", "image": "i",
                                     "envFrom": [{"configMapRef": {"name": f"eph-cm{i}-{node}"}}]}],
               volumes=[{"name": "s", "secret": {"secretName": f"secret{i}-{node}"}},
                        {"name": "c", "configMap": {"name": f"configmap{i}-{node}"}},
                        {"name": "p", "projected": {"sources": [{"secret": {"name": f"projected-secret{i}-{node}"}},
                                                               {"configMap": {"name": "shared-configmap"}}]}},
                        {"name": "v", "persistentVolumeClaim": {"claimName": f"pvc{i}-{node}"}},
                        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
               resourceClaims=[{"name": "named", "resourceClaimName": f"claim{i}-{node}"},
                               {"name": "tmpl", "resourceClaimTemplateName": "t"}])


def pv(name: str, claim_ns: str, claim: str, secret: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"claimRef": {"namespace": claim_ns, "name": claim},
                     "rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": secret}},
                     "csi": {"driver": "d", "volumeHandle": "h",
                             "controllerPublishSecretRef": {"name": "ctrl-" + secret, "namespace": claim_ns}}}}


@pytest.fixture
async def authz() -> AsyncIterator[NodeAuthorizer]:
    storage = new_storage("memory")
    for node in ("node0", "node1"):
        for i in range(2):
            p = uses(node, i)
            await storage.create(f"/registry/pods/ns0/{p['metadata']['name']}", p)
        await storage.create(f"/registry/persistentvolumes/pv0-{node}", pv(f"pv0-{node}", "ns0", f"pvc0-{node}",
                                                                            f"pv-secret0-{node}"))
    await storage.create("/registry/pods/ns0/unbound", pod("unbound", "", volumes=[
        {"name": "s", "secret": {"secretName": "unbound-secret"}}]))
    await storage.create("/registry/volumeattachments/attachment0-node0",
                         {"metadata": {"name": "attachment0-node0"}, "spec": {"nodeName": "node0"}})
    await storage.create("/registry/resourceslices/slice0-node0",
                         {"metadata": {"name": "slice0-node0"}, "spec": {"nodeName": "node0"}})
    z = NodeAuthorizer.for_storage(storage)
    await z.start()
    yield z
    z.stop()
    await storage.close()


def a(verb: str, resource: str, name: str = "", ns: str = "ns0", group: str = "", sub: str = "",
      user: UserInfo = NODE0, field_selector: str = "") -> Attributes:
    return Attributes(user, verb, True, ns, group, "v1", resource, sub, name, field_selector=field_selector)


NO_REL = "no relationship found between node 'node0' and this object"

CASES = [
    # upstream: allowed/disallowed configmap, secret, pvc, pv, resource claim, svcacct token
    ("allowed configmap", a("get", "configmaps", "configmap0-node0"), ALLOW, ""),
    ("allowed env configmap", a("get", "configmaps", "env-cm1-node0"), ALLOW, ""),
    ("allowed ephemeral container configmap", a("get", "configmaps", "eph-cm0-node0"), ALLOW, ""),
    ("allowed shared projected configmap", a("get", "configmaps", "shared-configmap"), ALLOW, ""),
    ("allowed secret via pod", a("get", "secrets", "secret0-node0"), ALLOW, ""),
    ("allowed image pull secret", a("get", "secrets", "pull1-node0"), ALLOW, ""),
    ("allowed env secret", a("get", "secrets", "env-secret0-node0"), ALLOW, ""),
    ("allowed projected secret", a("get", "secrets", "projected-secret1-node0"), ALLOW, ""),
    ("allowed shared secret via pod", a("get", "secrets", "shared-secret"), ALLOW, ""),
    ("allowed watch of one secret", a("watch", "secrets", "secret0-node0"), ALLOW, ""),
    ("allowed list of one secret", a("list", "secrets", "secret0-node0"), ALLOW, ""),
    ("allowed pvc", a("get", "persistentvolumeclaims", "pvc0-node0"), ALLOW, ""),
    ("allowed ephemeral pvc", a("get", "persistentvolumeclaims", "pod1-node0-e"), ALLOW, ""),
    ("allowed pvc status update", a("patch", "persistentvolumeclaims", "pvc0-node0", sub="status"), ALLOW, ""),
    ("allowed pv", a("get", "persistentvolumes", "pv0-node0", ns=""), ALLOW, ""),
    ("allowed secret via pv", a("get", "secrets", "pv-secret0-node0"), ALLOW, ""),
    ("allowed resource claim", a("get", "resourceclaims", "claim0-node0", group="resource.k8s.io"), ALLOW, ""),
    ("allowed svcacct token create", a("create", "serviceaccounts", "svcacct0-node0", sub="token"), ALLOW, ""),
    ("allowed attachment", a("get", "volumeattachments", "attachment0-node0", ns="", group="storage.k8s.io"),
     ALLOW, ""),
    ("allowed resource slice get", a("get", "resourceslices", "slice0-node0", ns="", group="resource.k8s.io"),
     ALLOW, ""),

    ("disallowed configmap", a("get", "configmaps", "configmap0-node1"), NO, NO_REL),
    ("disallowed secret via pod", a("get", "secrets", "secret0-node1"), NO, NO_REL),
    ("disallowed secret of an unbound pod", a("get", "secrets", "unbound-secret"), NO, NO_REL),
    ("disallowed unknown secret", a("get", "secrets", "nope"), NO, NO_REL),
    ("disallowed controller-only csi secret", a("get", "secrets", "ctrl-pv-secret0-node0"), NO, NO_REL),
    ("disallowed secret in another namespace", a("get", "secrets", "secret0-node0", ns="ns1"), NO, NO_REL),
    ("disallowed pvc", a("get", "persistentvolumeclaims", "pvc0-node1"), NO, NO_REL),
    ("disallowed pv", a("get", "persistentvolumes", "pv0-node1", ns=""), NO, NO_REL),
    ("disallowed secret via pv", a("get", "secrets", "pv-secret0-node1"), NO, NO_REL),
    ("disallowed resource claim", a("get", "resourceclaims", "claim0-node1", group="resource.k8s.io"), NO, NO_REL),
    ("disallowed svcacct token create", a("create", "serviceaccounts", "svcacct0-node1", sub="token"), NO, NO_REL),
    ("disallowed attachment", a("get", "volumeattachments", "attachment0-node1", ns="", group="storage.k8s.io"),
     NO, NO_REL),
    ("disallowed list many secrets", a("list", "secrets"), NO, "No Object name found"),
    ("disallowed watch many secrets", a("watch", "secrets"), NO, "No Object name found"),
    ("disallowed list secrets from all namespaces", a("list", "secrets", ns=""), NO,
     "can only read namespaced object of this type"),
    ("disallowed secret update", a("update", "secrets", "secret0-node0"), NO, "can only read resources of this type"),
    ("disallowed secret subresource", a("get", "secrets", "secret0-node0", sub="x"), NO, "cannot read subresource"),
    ("disallowed pvc list", a("list", "persistentvolumeclaims"), NO, "can only get individual resources of this type"),
    ("disallowed pvc subresource", a("get", "persistentvolumeclaims", "pvc0-node0", sub="x"), NO,
     "cannot get subresource"),
    ("disallowed pvc status get", a("get", "persistentvolumeclaims", "pvc0-node0", sub="status"), NO,
     "can only get/update/patch this type"),
    ("disallowed svcacct get", a("get", "serviceaccounts", "svcacct0-node0"), NO,
     "can only create tokens for individual service accounts"),
    ("disallowed svcacct other subresource", a("create", "serviceaccounts", "svcacct0-node0", sub="x"), NO,
     "can only create token subresource of serviceaccount"),
    ("disallowed template claim not generated yet", a("get", "resourceclaims", "pod0-node0-tmpl",
                                                      group="resource.k8s.io"), NO, NO_REL),

    # leases (upstream: "allowed node lease - get" ... "disallowed lease in namespace other than kube-node-lease")
    ("allowed node lease - get", a("get", "leases", "node0", ns="kube-node-lease", group="coordination.k8s.io"),
     ALLOW, ""),
    ("allowed node lease - create", a("create", "leases", "", ns="kube-node-lease", group="coordination.k8s.io"),
     ALLOW, ""),
    ("allowed node lease - update", a("update", "leases", "node0", ns="kube-node-lease", group="coordination.k8s.io"),
     ALLOW, ""),
    ("disallowed node lease - list", a("list", "leases", "", ns="kube-node-lease", group="coordination.k8s.io"),
     NO, "can only get, create, update, patch, or delete a node lease"),
    ("disallowed node lease - deletecollection", a("deletecollection", "leases", "", ns="kube-node-lease",
                                                   group="coordination.k8s.io"),
     NO, "can only get, create, update, patch, or delete a node lease"),
    ("disallowed get another node's lease", a("get", "leases", "node1", ns="kube-node-lease",
                                              group="coordination.k8s.io"),
     NO, "can only access node lease with the same name as the requesting node"),
    ("disallowed lease in namespace other than kube-node-lease - get", a("get", "leases", "node0",
                                                                         group="coordination.k8s.io"),
     NO, 'can only access leases in the "kube-node-lease" system namespace'),

    # csinodes
    ("allowed CSINode - get", a("get", "csinodes", "node0", ns="", group="storage.k8s.io"), ALLOW, ""),
    ("allowed CSINode - create", a("create", "csinodes", "", ns="", group="storage.k8s.io"), ALLOW, ""),
    ("disallowed CSINode - list", a("list", "csinodes", "", ns="", group="storage.k8s.io"), NO,
     "can only get, create, update, patch, or delete a CSINode"),
    ("disallowed CSINode with subresource", a("get", "csinodes", "node0", ns="", group="storage.k8s.io", sub="x"),
     NO, "cannot authorize CSINode subresources"),
    ("disallowed get another node's CSINode", a("get", "csinodes", "node1", ns="", group="storage.k8s.io"), NO,
     "can only access CSINode with the same name as the requesting node"),

    # resource slices
    ("allowed ResourceSlice create", a("create", "resourceslices", "", ns="", group="resource.k8s.io"), ALLOW, ""),
    ("allowed filtered ResourceSlice list", a("list", "resourceslices", "", ns="", group="resource.k8s.io",
                                              field_selector="nodeName=node0"), ALLOW, ""),
    ("disallowed unfiltered ResourceSlice watch", a("watch", "resourceslices", "", ns="", group="resource.k8s.io"),
     NO, "can only list/watch/deletecollection resourceslices with nodeName field selector"),
    ("disallowed other node's ResourceSlice", a("delete", "resourceslices", "slice0-node1", ns="",
                                                group="resource.k8s.io"), NO, NO_REL),

    # nodes
    ("allowed own node get", a("get", "nodes", "node0", ns=""), ALLOW, ""),
    ("allowed node create", a("create", "nodes", "", ns=""), ALLOW, ""),
    ("allowed node status patch", a("patch", "nodes", "node0", ns="", sub="status"), ALLOW, ""),
    ("disallowed other node get", a("get", "nodes", "node1", ns=""), NO,
     "node 'node0' cannot read 'node1', only its own Node object"),
    ("disallowed list all nodes", a("list", "nodes", "", ns=""), NO,
     "node 'node0' cannot read all nodes, only its own Node object"),
    ("disallowed node delete", a("delete", "nodes", "node0", ns=""), NO, ""),

    # pods
    ("allowed own pod get", a("get", "pods", "pod0-node0"), ALLOW, ""),
    ("allowed filtered pod list", a("list", "pods", ns="", field_selector="spec.nodeName=node0"), ALLOW, ""),
    ("allowed filtered pod watch (==)", a("watch", "pods", ns="",
                                          field_selector="metadata.namespace!=x,spec.nodeName==node0"), ALLOW, ""),
    ("allowed pod status patch", a("patch", "pods", "pod0-node1", sub="status"), ALLOW, ""),
    ("allowed pod eviction", a("create", "pods", "pod0-node0", sub="eviction"), ALLOW, ""),
    ("allowed mirror pod create", a("create", "pods"), ALLOW, ""),
    ("disallowed other node's pod get", a("get", "pods", "pod0-node1"), NO, NO_REL),
    ("disallowed unfiltered pod list", a("list", "pods", ns=""), NO,
     "can only list/watch pods with spec.nodeName field selector"),
    ("disallowed pod list for another node", a("list", "pods", ns="", field_selector="spec.nodeName=node1"), NO,
     "can only list/watch pods with spec.nodeName field selector"),
    ("disallowed pod update", a("update", "pods", "pod0-node0"), NO, ""),
    ("disallowed pod exec", a("create", "pods", "pod0-node0", sub="exec"), NO, ""),

    # the static rules of system:node
    ("allowed event create", a("create", "events"), ALLOW, ""),
    ("allowed services list", a("list", "services", ns=""), ALLOW, ""),
    ("allowed tokenreview", a("create", "tokenreviews", ns="", group="authentication.k8s.io"), ALLOW, ""),
    ("disallowed deployments", a("get", "deployments", "d", group="apps"), NO, ""),
    ("disallowed non-resource", Attributes(NODE0, "get", False, path="/metrics"), NO, ""),

    # who is a node
    ("not a node: no opinion", a("get", "secrets", "secret0-node0", user=component("jane")), NO, ""),
    ("node name without the nodes group", a("get", "secrets", "secret0-node0",
                                            user=authenticated("system:node:node0")), NO, ""),
    ("unknown node", a("get", "secrets", "secret0-node0", user=authenticated("system:node:", "system:nodes")), NO,
     'unknown node for user "system:node:"'),
]


@pytest.mark.parametrize("attrs, decision, reason", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_authorizer(authz: NodeAuthorizer, attrs: Attributes, decision: Decision, reason: str) -> None:
    assert authz.authorize(attrs) == (decision, reason)


def test_rules_for(authz: NodeAuthorizer) -> None:
    """Upstream: a node's rules are not enumerable (SelfSubjectRulesReview says incomplete)."""
    assert authz.rules_for(NODE0, "ns0") == ([], [], True, "node authorizer does not support user rule resolution")
    assert authz.rules_for(component("jane"), "ns0") == ([], [], False, "")


def test_node_identity() -> None:
    assert node_identity(component("system:node:n1")) == ("n1", True)
    assert node_identity(authenticated("system:node:n1")) == ("", False)
    assert node_identity(component("system:kube-scheduler")) == ("", False)


async def test_graph_follows_the_store() -> None:
    """A pod bound after start, its deletion, a status write (skipped), a pv rebound: each
    decision sees the store as it is now (no informer lag)."""
    storage = new_storage("memory")
    z = NodeAuthorizer.for_storage(storage)
    await z.start()
    get = a("get", "secrets", "s1")
    assert z.authorize(get) == (NO, NO_REL)
    kv = await storage.create("/registry/pods/ns0/p1", pod("p1", "", volumes=[{"name": "s",
                                                                             "secret": {"secretName": "s1"}}]))
    assert z.authorize(get) == (NO, NO_REL)                 # not bound yet
    bound = {**kv.obj, "spec": {**kv.obj["spec"], "nodeName": "node0"}}
    kv = await storage.update("/registry/pods/ns0/p1", bound)
    assert z.authorize(get) == (ALLOW, "")
    kv = await storage.update("/registry/pods/ns0/p1", {**kv.obj, "status": {"phase": "Running"}})
    assert z.authorize(get) == (ALLOW, "")
    assert z.authorize(a("get", "secrets", "s1", user=component("system:node:node1"))) == (
        NO, "no relationship found between node 'node1' and this object")
    await storage.delete("/registry/pods/ns0/p1")
    assert z.authorize(get) == (NO, NO_REL)
    assert z.graph.vertices == {}                           # nothing left behind
    z.stop()
    await storage.close()


def test_graph_drops_orphans_and_counts_destinations() -> None:
    """Upstream graph_test.go TestIndex, in short: shared objects count each node once per pod,
    and deleting pods removes what only they used."""
    g = Graph()
    for i, node in enumerate(["n1", "n1", "n2"]):
        g.add_pod(pod(f"p{i}", node, volumes=[{"name": "s", "secret": {"secretName": "shared"}},
                                              {"name": "c", "configMap": {"name": f"cm{i}"}}]))
    shared = g.vertices[(SECRET, "ns0", "shared")]
    assert {v.key[2]: n for v, n in shared.dest.items()} == {"n1": 2, "n2": 1}
    g.add_pod(pod("p0", "n1"))                               # re-added without references
    assert (CONFIGMAP, "ns0", "cm0") not in g.vertices
    assert {v.key[2]: n for v, n in shared.dest.items()} == {"n1": 1, "n2": 1}
    g.delete_pod("ns0", "p1")
    g.delete_pod("ns0", "p2")
    assert (SECRET, "ns0", "shared") not in g.vertices
    assert set(g.vertices) == {(POD, "ns0", "p0"), (NODE, "", "n1")}


def test_mirror_pod_grants_nothing() -> None:
    g = Graph()
    p = pod("m", "n1", volumes=[{"name": "s", "secret": {"secretName": "s"}}])
    p["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    g.add_pod(p)
    assert g.has_path_from("n1", SECRET, "ns0", "s") is False
    assert g.has_path_from("n1", POD, "ns0", "m") is True
    assert g.why_not("n1", SECRET, "ns0", "s") == "node 'n1' cannot get unknown secret ns0/s"
    assert g.why_not("n2", POD, "ns0", "m") == "unknown node 'n2' cannot get pod ns0/m"


class AllowNodesTheRest:
    """A stand-in for RBAC granting system:nodes what the node authorizer does not subdivide
    (events, services, ...), and nothing to anyone else."""
    REST = Rules(tuple(r for r in NODE_RULES if not set(r[2]) & {"secrets", "configmaps", "pods", "nodes"}))

    def authorize(self, a: Attributes) -> tuple[Decision, str]:
        if "system:nodes" in a.user.groups and self.REST.allow(a):
            return ALLOW, ""
        return NO, ""


async def test_union_with_rbac(authz: NodeAuthorizer) -> None:
    """Node,RBAC without the rbac package: the graph decides secrets and pods, the next
    authorizer the rest; what both have no opinion on is refused, with the node's reason."""
    for z in (Union(NodeAuthorizer(authz.populator, Rules(())), AllowNodesTheRest()),
              Union(authz, AllowNodesTheRest())):
        assert z.authorize(a("create", "events")) == (ALLOW, "")
        assert z.authorize(a("list", "services", ns="")) == (ALLOW, "")
        assert z.authorize(a("get", "secrets", "secret0-node0")) == (ALLOW, "")
        assert z.authorize(a("patch", "pods", "pod0-node0", sub="status")) == (ALLOW, "")
        assert z.authorize(a("get", "secrets", "secret0-node1")) == (NO, NO_REL)
        assert z.authorize(a("get", "nodes", "node1", ns="")) == (
            NO, "node 'node0' cannot read 'node1', only its own Node object")
        assert z.authorize(a("get", "deployments", "d", group="apps")) == (NO, "")


async def test_a_graph_that_fell_out_of_the_window_relists() -> None:
    """More writes than the watch window holds between two questions: the pull raises
    Compacted, the graph answers from what it had, re-lists in a task, then is current."""
    import asyncio

    from kubeplane.storage.memory import MemoryStorage
    storage = MemoryStorage(history=8)
    z = NodeAuthorizer.for_storage(storage)
    await z.start()
    await storage.create("/registry/pods/ns0/p1", pod("p1", "node0", volumes=[{"name": "s",
                                                                             "secret": {"secretName": "s1"}}]))
    for i in range(20):                                  # push p1's event out of the window
        await storage.create(f"/registry/configmaps/ns0/c{i}", {"metadata": {"name": f"c{i}"}})
    get = a("get", "secrets", "s1")
    assert z.authorize(get) == (NO, NO_REL)              # stale until the re-list
    for _ in range(5):
        await asyncio.sleep(0)
    assert z.authorize(get) == (ALLOW, "")
    await storage.delete("/registry/pods/ns0/p1")
    assert z.authorize(get) == (NO, NO_REL)              # and watched again
    z.stop()
    await storage.close()


@pytest.mark.parametrize("method,path", [
    ("POST", "/api/v1/namespaces/ns0/events"),                            # the kubelets' Events
    ("PATCH", "/api/v1/namespaces/ns0/events/pod0.17a"),
    ("PUT", "/api/v1/namespaces/ns0/events/pod0.17a"),
    ("DELETE", "/api/v1/namespaces/ns0/events/pod0.17a"),                 # not in the rules
    ("GET", "/api/v1/services"), ("GET", "/api/v1/namespaces/ns0/endpoints/e"),
    ("POST", "/apis/authentication.k8s.io/v1/tokenreviews"),
    ("POST", "/api/v1/namespaces/ns0/pods/p/eviction"),                   # pods: the graph's check
    ("PATCH", "/api/v1/namespaces/ns0/pods/pod0-node0/status"),       # decided without Attributes
    ("PUT", "/api/v1/namespaces/ns0/pods/other/status"), ("GET", "/api/v1/namespaces/ns0/pods/other/status"),
    ("PATCH", "/apis/other.io/v1/namespaces/ns0/pods/p/status"),
    ("GET", "/api/v1/namespaces/ns0/secrets/secret0-node0"), ("GET", "/api/v1/namespaces/ns0/secrets/other"),
    ("PATCH", "/api/v1/nodes/node0/status"), ("GET", "/apis/apps/v1/deployments"),
    ("GET", "/apis/storage.k8s.io/v1/csidrivers"), ("PATCH", "/api/v1/namespaces/ns0/persistentvolumeclaims/c/status"),
    ("GET", "/healthz"), ("GET", "/api/v1"),
])
@pytest.mark.parametrize("user", [NODE0, component("system:node:"), component("system:kube-scheduler"),
                                  UserInfo("system:node:node0", "", ("system:authenticated",))])
async def test_decide_answers_what_authorize_answers(authz: NodeAuthorizer, method: str, path: str,
                                                      user: UserInfo) -> None:
    """decide()'s shortcut for the static rules (no Attributes built) is authorize() exactly,
    an opinion as it is and no opinion as None."""
    from kubeplane.apiserver.authorization.authorizer import attributes_of
    from kubeplane.apiserver.request import Request, parse_request_info
    info = parse_request_info(Request(method, path, {}, {}))
    want = authz.authorize(attributes_of(user, info, path))
    assert authz.decide(user, info, path, "") == (want if want[0] is not NO else None)
