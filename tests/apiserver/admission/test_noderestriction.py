"""NodeRestriction, with upstream's cases (plugin/pkg/admission/noderestriction/admission_test.go
Test_nodePlugin_Admit, the important ones): a node changes only its own pods' status, its own
mirror pods, Node, Lease, CSINode and ResourceSlices; anyone else passes untouched."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.noderestriction import NodeRestriction, forbidden_labels
from kubeplane.apiserver.authentication.user import UserInfo, authenticated, component
from kubeplane.apiserver.server import APIServer

MYNODE = component("system:node:mynode")
BOB = component("bob")
MIRROR = {"kubernetes.io/config.mirror": "hash"}


def pod(name: str, node: str, ns: str = "ns", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", **meta},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}}


def mirror(node: str = "mynode", owner: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    owner = owner if owner is not None else {"apiVersion": "v1", "kind": "Node", "name": node, "uid": "mynode-uid",
                                             "controller": True}
    p = pod("mirror", node, annotations=MIRROR, ownerReferences=[owner] if owner else [])
    p["spec"].update(spec)
    return p


def node(name: str = "mynode", labels: dict[str, str] | None = None, taints: Any = None) -> dict[str, Any]:
    spec = {"taints": taints} if taints is not None else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"{name}-uid",
                                                           "labels": labels or {}}, "spec": spec}


@pytest.fixture
async def server(server: APIServer) -> APIServer:
    for p in (pod("mypod", "mynode"), pod("otherpod", "othernode"), pod("unbound", "")):
        await server.storage.create(f"/registry/pods/ns/{p['metadata']['name']}", p)
    await server.storage.create("/registry/nodes/mynode", node())
    return server


def attrs(op: Operation, resource: str, name: str, obj: Any = None, old: Any = None, *, sub: str = "",
          ns: str = "ns", group: str = "", user: UserInfo = MYNODE) -> Attributes:
    return Attributes(op, group, "v1", resource, "", ns, name, obj, old, sub, user=user)


async def admit(server: APIServer, a: Attributes) -> str:
    """"" if admitted, else the refusal's message."""
    try:
        await NodeRestriction(server).admit(a)
    except errors.StatusError as e:
        return f"{e.code} {e.message}"
    return ""


C, U, D = Operation.CREATE, Operation.UPDATE, Operation.DELETE
F = '403 pods "mirror" is forbidden: '
with_secret = {"volumes": [{"name": "s", "secret": {"secretName": "foo"}}]}
with_cm = {"containers": [{"name": "c", "image": "i", "envFrom": [{"configMapRef": {"name": "foo"}}]}]}
with_pvc = {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "foo"}}]}
with_ctb = {"volumes": [{"name": "v", "projected": {"sources": [{"clusterTrustBundle": {"path": "p"}}]}}]}
labelled = pod("mypod", "mynode", labels={"a": "b"})
my_status = {**pod("mypod", "mynode"), "status": {"phase": "Running"}}
eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "mypod", "namespace": "ns"}}


CASES = [
    # mirror pods
    ("allow creating a mirror pod bound to self", attrs(C, "pods", "mirror", mirror()), ""),
    ("forbid creating a mirror pod bound to another", attrs(C, "pods", "mirror", mirror("othernode")),
     F + 'node "mynode" can only create pods with spec.nodeName set to itself'),
    ("forbid creating a mirror pod unbound", attrs(C, "pods", "mirror", mirror("")),
     F + 'node "mynode" can only create pods with spec.nodeName set to itself'),
    ("forbid creating a non-mirror pod", attrs(C, "pods", "mypod", pod("mypod", "mynode")),
     '403 pods "mypod" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "mynode" '
     'can only create mirror pods'),
    ("forbid a mirror pod without an owner", attrs(C, "pods", "mirror", mirror(owner={})),
     F + 'node "mynode" can only create pods with an owner reference set to itself'),
    ("forbid a mirror pod owned by another node",
     attrs(C, "pods", "mirror", mirror(owner={"apiVersion": "v1", "kind": "Node", "name": "othernode",
                                               "uid": "x", "controller": True})),
     F + 'node "mynode" can only create pods with an owner reference set to itself'),
    ("forbid a non-controller owner",
     attrs(C, "pods", "mirror", mirror(owner={"apiVersion": "v1", "kind": "Node", "name": "mynode",
                                               "uid": "mynode-uid"})),
     F + 'node "mynode" can only create pods with a controller owner reference set to itself'),
    ("forbid blockOwnerDeletion",
     attrs(C, "pods", "mirror", mirror(owner={"apiVersion": "v1", "kind": "Node", "name": "mynode",
                                               "uid": "mynode-uid", "controller": True,
                                               "blockOwnerDeletion": True})),
     F + 'node "mynode" must not set blockOwnerDeletion on an owner reference'),
    ("forbid a wrong node uid",
     attrs(C, "pods", "mirror", mirror(owner={"apiVersion": "v1", "kind": "Node", "name": "mynode",
                                               "uid": "other-uid", "controller": True})),
     F + "node mynode UID mismatch: expected other-uid got mynode-uid"),
    ("forbid a mirror pod with a service account", attrs(C, "pods", "mirror", mirror(serviceAccountName="foo")),
     F + 'node "mynode" can not create pods that reference a service account'),
    ("forbid a mirror pod with a secret", attrs(C, "pods", "mirror", mirror(**with_secret)),
     F + 'node "mynode" can not create pods that reference secrets'),
    ("forbid a mirror pod with a configmap", attrs(C, "pods", "mirror", mirror(**with_cm)),
     F + 'node "mynode" can not create pods that reference configmaps'),
    ("forbid a mirror pod with a pvc", attrs(C, "pods", "mirror", mirror(**with_pvc)),
     F + 'node "mynode" can not create pods that reference persistentvolumeclaims'),
    ("forbid a mirror pod with a cluster trust bundle", attrs(C, "pods", "mirror", mirror(**with_ctb)),
     F + 'node "mynode" can not create pods that reference clustertrustbundles'),
    ("allow deleting a pod bound to self", attrs(D, "pods", "mypod"), ""),
    ("forbid deleting a pod bound to another", attrs(D, "pods", "otherpod"),
     '403 pods "otherpod" is forbidden: node "mynode" can only delete pods with spec.nodeName set to itself'),
    ("forbid deleting an unbound pod", attrs(D, "pods", "unbound"),
     '403 pods "unbound" is forbidden: node "mynode" can only delete pods with spec.nodeName set to itself'),
    ("deleting a missing pod: NotFound", attrs(D, "pods", "nope"), '404 pods "nope" not found'),
    ("forbid updating a pod", attrs(U, "pods", "mypod", pod("mypod", "mynode"), pod("mypod", "mynode")),
     '403 pods "mypod" is forbidden: unexpected operation "UPDATE", node "mynode" can only create and delete '
     'mirror pods'),

    # pod status
    ("allow updating the status of a pod bound to self",
     attrs(U, "pods", "mypod", my_status, pod("mypod", "mynode"), sub="status"), ""),
    ("forbid updating the status of a pod bound to another",
     attrs(U, "pods", "otherpod", pod("otherpod", "othernode"), pod("otherpod", "othernode"), sub="status"),
     '403 pods "otherpod" is forbidden: node "mynode" can only update pod status for pods with spec.nodeName '
     'set to itself'),
    ("forbid changing labels through pod status",
     attrs(U, "pods", "mypod", labelled, pod("mypod", "mynode"), sub="status"),
     '403 pods "mypod" is forbidden: node "mynode" cannot update labels through pod status'),
    ("forbid changing resource claim statuses",
     attrs(U, "pods", "mypod", {**my_status, "status": {"resourceClaimStatuses": [{"name": "a",
                                                                                   "resourceClaimName": "x"}]}},
           pod("mypod", "mynode"), sub="status"),
     '403 pods "mypod" is forbidden: node "mynode" cannot update resource claim statues'),
    ("forbid an unexpected pod subresource", attrs(C, "pods", "mypod", {}, sub="binding"),
     '403 pods "mypod" is forbidden: unexpected pod subresource "binding", only \'status\' and \'eviction\' '
     'are allowed'),

    # evictions
    ("allow evicting a pod bound to self", attrs(C, "pods", "mypod", eviction, sub="eviction"), ""),
    ("forbid evicting a pod bound to another", attrs(C, "pods", "otherpod", eviction, sub="eviction"),
     '403 pods "otherpod" is forbidden: node mynode can only evict pods with spec.nodeName set to itself'),
    ("allow an eviction named by its body", attrs(C, "pods", "", eviction, sub="eviction"), ""),
    ("forbid an eviction naming no pod", attrs(C, "pods", "", {"metadata": {}}, sub="eviction"),
     '403 pods "Unknown" is forbidden: could not determine pod from request data'),

    # nodes
    ("allow creating own node", attrs(C, "nodes", "mynode", node(), ns=""), ""),
    ("forbid creating another node", attrs(C, "nodes", "othernode", node("othernode"), ns=""),
     '403 nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode"'),
    ("forbid updating another node", attrs(U, "nodes", "othernode", node("othernode"), node("othernode"), ns=""),
     '403 nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode"'),
    ("forbid deleting another node", attrs(D, "nodes", "othernode", ns=""),
     '403 nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode"'),
    ("allow kubelet labels on create",
     attrs(C, "nodes", "mynode", node(labels={"kubernetes.io/hostname": "x", "node.kubernetes.io/foo": "x",
                                              "foo.kubelet.kubernetes.io/bar": "x", "custom": "x"}), ns=""), ""),
    ("forbid node-restriction labels on create",
     attrs(C, "nodes", "mynode", node(labels={"node-restriction.kubernetes.io/foo": "x",
                                              "foo.node-restriction.kubernetes.io/bar": "x"}), ns=""),
     '403 nodes "mynode" is forbidden: node "mynode" is not allowed to set the following labels: '
     'foo.node-restriction.kubernetes.io/bar, node-restriction.kubernetes.io/foo'),
    ("forbid unknown kubernetes.io labels on update",
     attrs(U, "nodes", "mynode", node(labels={"foo.k8s.io/x": "y", "kubernetes.io/role": "master"}), node(),
           ns=""),
     '403 nodes "mynode" is forbidden: is not allowed to modify labels: foo.k8s.io/x, kubernetes.io/role'),
    ("allow unchanged forbidden labels on update",
     attrs(U, "nodes", "mynode", node(labels={"node-restriction.kubernetes.io/foo": "x"}),
           node(labels={"node-restriction.kubernetes.io/foo": "x"}), ns=""), ""),
    ("forbid removing a node-restriction label",
     attrs(U, "nodes", "mynode", node(), node(labels={"node-restriction.kubernetes.io/foo": "x"}), ns=""),
     '403 nodes "mynode" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/foo'),
    ("forbid modifying taints", attrs(U, "nodes", "mynode", node(taints=[]), node(taints=[{"key": "k",
                                                                                           "effect": "NoSchedule"}]),
                                      ns=""),
     '403 nodes "mynode" is forbidden: node "mynode" is not allowed to modify taints'),
    ("allow updating own node status", attrs(U, "nodes", "mynode", node(), node(), sub="status", ns=""), ""),

    # persistent volume claims
    ("allow a pvc status capacity change",
     attrs(U, "persistentvolumeclaims", "claim", {"metadata": {"name": "claim"}, "status": {"capacity": {"storage": "2Gi"}}},
           {"metadata": {"name": "claim", "resourceVersion": "1"}, "status": {"capacity": {"storage": "1Gi"}}},
           sub="status"), ""),
    ("forbid a pvc status phase change",
     attrs(U, "persistentvolumeclaims", "claim", {"metadata": {"name": "claim"}, "status": {"phase": "Lost"}},
           {"metadata": {"name": "claim"}, "status": {"phase": "Bound"}}, sub="status"),
     '403 persistentvolumeclaims "claim" is forbidden: node "mynode" is not allowed to update fields other than '
     'status.quantity and status.conditions'),
    ("forbid a pvc update", attrs(U, "persistentvolumeclaims", "claim", {}, {}),
     '403 persistentvolumeclaims "claim" is forbidden: may only update PVC status'),

    # service account tokens
    ("allow a token bound to own pod",
     attrs(C, "serviceaccounts", "sa", {"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                                                                   "name": "mypod", "uid": "uid-mypod"}}},
           sub="token"), ""),
    ("forbid a token not bound to a pod", attrs(C, "serviceaccounts", "sa", {"spec": {}}, sub="token"),
     '403 serviceaccounts "sa" is forbidden: node requested token not bound to a pod'),
    ("forbid a token without a pod uid",
     attrs(C, "serviceaccounts", "sa", {"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                                                                   "name": "mypod"}}}, sub="token"),
     '403 serviceaccounts "sa" is forbidden: node requested token with a pod binding without a uid'),
    ("forbid a token bound to another node's pod",
     attrs(C, "serviceaccounts", "sa", {"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                                                                   "name": "otherpod", "uid": "uid-otherpod"}}},
           sub="token"),
     '403 serviceaccounts "sa" is forbidden: node requested token bound to a pod scheduled on a different node'),
    ("forbid a token with a stale pod uid",
     attrs(C, "serviceaccounts", "sa", {"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                                                                   "name": "mypod", "uid": "old"}}}, sub="token"),
     '403 serviceaccounts "sa" is forbidden: the UID in the bound object reference (old) does not match the UID '
     'in record. The object might have been deleted and then recreated'),

    # leases, csinodes, resource slices
    ("allow creating own lease", attrs(C, "leases", "mynode", {"metadata": {"name": "mynode"}}, ns="kube-node-lease",
                                       group="coordination.k8s.io"), ""),
    ("forbid creating another node's lease",
     attrs(C, "leases", "othernode", {"metadata": {"name": "othernode"}}, ns="kube-node-lease",
           group="coordination.k8s.io"),
     '403 leases.coordination.k8s.io "othernode" is forbidden: can only access node lease with the same name as '
     'the requesting node'),
    ("forbid updating another node's lease",
     attrs(U, "leases", "othernode", {}, {}, ns="kube-node-lease", group="coordination.k8s.io"),
     '403 leases.coordination.k8s.io "othernode" is forbidden: can only access node lease with the same name as '
     'the requesting node'),
    ("forbid a lease in another namespace",
     attrs(U, "leases", "mynode", {}, {}, ns="ns", group="coordination.k8s.io"),
     '403 leases.coordination.k8s.io "mynode" is forbidden: can only access leases in the "kube-node-lease" '
     'system namespace'),
    ("allow own csinode", attrs(U, "csinodes", "mynode", {}, {}, ns="", group="storage.k8s.io"), ""),
    ("forbid another csinode", attrs(D, "csinodes", "othernode", ns="", group="storage.k8s.io"),
     '403 csinodes.storage.k8s.io "othernode" is forbidden: can only access CSINode with the same name as the '
     'requesting node'),
    ("allow creating own resource slice", attrs(C, "resourceslices", "s", {"spec": {"nodeName": "mynode"}}, ns="",
                                                group="resource.k8s.io"), ""),
    ("forbid creating another node's resource slice",
     attrs(C, "resourceslices", "s", {"spec": {"nodeName": "othernode"}}, ns="", group="resource.k8s.io"),
     '403 resourceslices.resource.k8s.io "s" is forbidden: can only create ResourceSlice with the same NodeName as '
     'the requesting node'),

    # who is restricted
    ("a non-node may do anything", attrs(D, "nodes", "othernode", ns="", user=BOB), ""),
    ("a node name without the nodes group is not a node", attrs(D, "pods", "otherpod",
                                                               user=authenticated("system:node:mynode")), ""),
    ("a node user without a name", attrs(D, "pods", "otherpod", user=component("system:node:")),
     '403 pods "otherpod" is forbidden: could not determine node from user "system:node:"'),
]


@pytest.mark.parametrize("a, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_node_plugin_admit(server: APIServer, a: Attributes, expected: str) -> None:
    before = copy.deepcopy((a.obj, a.old_obj))
    assert await admit(server, a) == expected
    assert (a.obj, a.old_obj) == before           # it never mutates


@pytest.mark.parametrize("a, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_admit_now_decides_as_admit(server: APIServer, a: Attributes, expected: str) -> None:
    """What admit_now decides without a coroutine (anyone's but a node's requests, a node's
    pods/status writes) it decides as admit does; the rest it leaves to admit."""
    try:
        done = NodeRestriction(server).admit_now(a)
    except errors.StatusError as e:
        assert f"{e.code} {e.message}" == expected
        return
    if done:
        assert expected == ""
    else:
        assert a.user.name.startswith("system:node:") and not (a.resource == "pods" and a.subresource == "status")


def test_forbidden_labels() -> None:
    """Upstream: Test_getForbiddenLabels, in short."""
    assert forbidden_labels({"kubernetes.io/hostname", "topology.kubernetes.io/zone", "my.label/x", "plain",
                             "kubelet.kubernetes.io/x", "x.node.kubernetes.io/y"}) == []
    assert forbidden_labels({"node-role.kubernetes.io/master", "x.k8s.io/y", "k8s.io/z",
                             "node-restriction.kubernetes.io/a"}) == [
        "k8s.io/z", "node-restriction.kubernetes.io/a", "node-role.kubernetes.io/master", "x.k8s.io/y"]


async def test_in_the_chain() -> None:
    """On by default (as kubeadm and kind run it), in upstream's order: after ServiceAccount,
    before TaintNodesByCondition."""
    from kubeplane.storage import new_storage
    server = APIServer(new_storage("memory"))
    names = [p.NAME for p in server.admission.plugins]
    await server.storage.close()
    assert names.index("ServiceAccount") < names.index("NodeRestriction") < names.index("TaintNodesByCondition")
