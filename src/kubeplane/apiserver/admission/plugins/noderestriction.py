"""NodeRestriction: a kubelet (system:node:<name> in system:nodes) may change only what is its
own — mirror pods bound to itself (referencing nothing it could not read anyway), the status
and evictions of pods bound to it, its own Node (not its taints, nor node-restriction.kubernetes.io/
or unknown kubernetes.io labels), its Lease and CSINode, the status of PVCs (nothing else of
them), tokens bound to its pods, its ResourceSlices and its own certificate requests. Requests
from anyone else pass untouched (one prefix test).

The node authorizer lets these writes through by verb; this plugin looks at the objects. Pods
and Nodes are read from the store where upstream reads its informers' listers (a delete or an
eviction by a node: rare requests).

Upstream: plugin/pkg/admission/noderestriction/admission.go (Plugin.Admit and its admit*
helpers), kubeletapis.IsKubeletLabel (k8s.io/kubelet/pkg/apis/well_known_labels.go).
"""
from __future__ import annotations

from typing import Any

from ....api import errors
from ....api.pod_visitors import pod_secret_names
from ...authorization.node.graph import MIRROR_POD_ANNOTATION_KEY, pod_configmap_names
from ...authorization.node.node_authorizer import NAMESPACE_NODE_LEASE, node_identity
from ...registry.registry import REGISTRY
from ..chain import register
from ..interface import Attributes, Operation, Plugin, forbidden

Obj = dict[str, Any]

LABEL_NAMESPACE_NODE_RESTRICTION = "node-restriction.kubernetes.io"
# Labels a kubelet may set on its Node although they are kubernetes.io ones.
# Upstream: kubeletapis kubeletLabels and kubeletLabelNamespaces.
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type", "kubernetes.io/os",
    "kubernetes.io/arch", "node.kubernetes.io/windows-build", "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
KUBELET_SIGNERS = ("kubernetes.io/kubelet-serving", "kubernetes.io/kube-apiserver-client-kubelet")


def _q(s: Any) -> str:
    """Go's %q of a string."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _requesting_node(a: Attributes) -> str | None:
    """The node a request comes from, None when its user is not a node's; forbidden when the
    user is a node's but names none. Upstream: the start of Plugin.Admit (nodeidentifier)."""
    node, is_node = node_identity(a.user)
    if not is_node:
        return None
    if not node:
        raise forbidden(a, f"could not determine node from user {_q(a.user.name)}")
    return node


@register
class NodeRestriction(Plugin):
    NAME = "NodeRestriction"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE, Operation.DELETE})
    RESOURCES = frozenset({("", "pods"), ("", "nodes"), ("", "persistentvolumeclaims"), ("", "serviceaccounts"),
                           ("coordination.k8s.io", "leases"), ("storage.k8s.io", "csinodes"),
                           ("resource.k8s.io", "resourceslices"), ("certificates.k8s.io", "certificatesigningrequests")})
    MUTATING = True

    def admit_now(self, a: Attributes) -> bool:
        """Requests of anyone but a node are not this plugin's; a node's pods/status write (the
        kubelets' hottest, a few dict reads) is decided here, as admit decides it, without a
        coroutine."""
        if not a.user.name.startswith("system:node:"):
            return True
        if a.subresource != "status" or a.resource != "pods" or a.group != "":
            return False
        if (node := _requesting_node(a)) is not None:
            self.admit_pod_status(node, a)
        return True

    async def admit(self, a: Attributes) -> None:
        """Upstream: Plugin.Admit."""
        if not a.user.name.startswith("system:node:") or (node := _requesting_node(a)) is None:
            return
        if a.resource == "pods" and a.group == "":
            if a.subresource == "":
                await self.admit_pod(node, a)
            elif a.subresource == "status":
                self.admit_pod_status(node, a)
            elif a.subresource == "eviction":
                await self.admit_pod_eviction(node, a)
            else:
                raise forbidden(a, f"unexpected pod subresource {_q(a.subresource)}, only 'status' and 'eviction' "
                                   "are allowed")
        elif a.resource == "nodes":
            self.admit_node(node, a)
        elif a.resource == "persistentvolumeclaims":
            if a.subresource != "status":
                raise forbidden(a, "may only update PVC status")
            self.admit_pvc_status(node, a)
        elif a.resource == "serviceaccounts":
            await self.admit_service_account(node, a)
        elif a.resource == "leases":
            self.admit_lease(node, a)
        elif a.resource == "csinodes":
            self.admit_csinode(node, a)
        elif a.resource == "resourceslices":
            self.admit_resource_slice(node, a)
        elif a.resource == "certificatesigningrequests":
            self.admit_csr(node, a)

    # --- pods --------------------------------------------------------------------------------

    async def admit_pod(self, node: str, a: Attributes) -> None:
        """Only mirror pods bound to itself may be created, only its pods deleted."""
        if a.operation is Operation.CREATE:
            await self.admit_pod_create(node, a)
        elif a.operation is Operation.DELETE:
            existing = await self._get("pods", a.namespace, a.name)
            if (existing.get("spec") or {}).get("nodeName") != node:
                raise forbidden(a, f"node {_q(node)} can only delete pods with spec.nodeName set to itself")
        else:
            raise forbidden(a, f"unexpected operation {_q(a.operation.value)}, node {_q(node)} can only create "
                               "and delete mirror pods")

    async def admit_pod_create(self, node: str, a: Attributes) -> None:
        """Upstream: admitPodCreate."""
        pod = a.obj or {}
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if MIRROR_POD_ANNOTATION_KEY not in (meta.get("annotations") or {}):
            raise forbidden(a, f"pod does not have {_q(MIRROR_POD_ANNOTATION_KEY)} annotation, node {_q(node)} "
                               "can only create mirror pods")
        if spec.get("nodeName") != node:
            raise forbidden(a, f"node {_q(node)} can only create pods with spec.nodeName set to itself")
        owners = meta.get("ownerReferences") or []
        if len(owners) > 1:
            raise forbidden(a, f"node {_q(node)} can only create pods with a single owner reference set to itself")
        if not owners:
            raise forbidden(a, f"node {_q(node)} can only create pods with an owner reference set to itself")
        owner = owners[0]
        if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
            raise forbidden(a, f"node {_q(node)} can only create pods with an owner reference set to itself")
        if not owner.get("controller"):
            raise forbidden(a, f"node {_q(node)} can only create pods with a controller owner reference set to "
                               "itself")
        if owner.get("blockOwnerDeletion"):
            raise forbidden(a, f"node {_q(node)} must not set blockOwnerDeletion on an owner reference")
        stored = await self._get("nodes", "", node)
        uid = (stored.get("metadata") or {}).get("uid", "")
        if owner.get("uid", "") != uid:
            raise forbidden(a, f"node {node} UID mismatch: expected {owner.get('uid', '')} got {uid}")
        # A node must not create a pod that references other API objects.
        if spec.get("serviceAccountName"):
            raise forbidden(a, f"node {_q(node)} can not create pods that reference a service account")
        if next(pod_secret_names(spec), None) is not None:
            raise forbidden(a, f"node {_q(node)} can not create pods that reference secrets")
        if next(pod_configmap_names(spec), None) is not None:
            raise forbidden(a, f"node {_q(node)} can not create pods that reference configmaps")
        volumes = spec.get("volumes") or ()
        for v in volumes:
            for src in (v.get("projected") or {}).get("sources") or ():
                if src.get("clusterTrustBundle") is not None:
                    raise forbidden(a, f"node {_q(node)} can not create pods that reference clustertrustbundles")
        if any(v.get("persistentVolumeClaim") is not None for v in volumes):
            raise forbidden(a, f"node {_q(node)} can not create pods that reference persistentvolumeclaims")

    def admit_pod_status(self, node: str, a: Attributes) -> None:
        """Upstream: admitPodStatus (the kubelets' hottest write: a few dict reads)."""
        if a.operation is not Operation.UPDATE:
            raise forbidden(a, f"unexpected operation {_q(a.operation.value)}")
        old, new = a.old_obj or {}, a.obj or {}
        if (old.get("spec") or {}).get("nodeName") != node:
            raise forbidden(a, f"node {_q(node)} can only update pod status for pods with spec.nodeName set to "
                               "itself")
        old_labels, new_labels = (old.get("metadata") or {}).get("labels"), (new.get("metadata") or {}).get("labels")
        if old_labels is not new_labels and (old_labels or {}) != (new_labels or {}):
            raise forbidden(a, f"node {_q(node)} cannot update labels through pod status")
        old_claims = (old.get("status") or {}).get("resourceClaimStatuses")
        new_claims = (new.get("status") or {}).get("resourceClaimStatuses")
        if (old_claims or new_claims) and _claim_statuses(old) != _claim_statuses(new):
            raise forbidden(a, f"node {_q(node)} cannot update resource claim statues")

    async def admit_pod_eviction(self, node: str, a: Attributes) -> None:
        """Upstream: admitPodEviction."""
        if a.operation is not Operation.CREATE:
            raise forbidden(a, f"unexpected operation {a.operation.value}")
        name = a.name or ((a.obj or {}).get("metadata") or {}).get("name")
        if not name:
            raise forbidden(a, "could not determine pod from request data")
        existing = await self._get("pods", a.namespace, name)
        if (existing.get("spec") or {}).get("nodeName") != node:
            raise forbidden(a, f"node {node} can only evict pods with spec.nodeName set to itself")

    # --- nodes -------------------------------------------------------------------------------

    def admit_node(self, node: str, a: Attributes) -> None:
        """Upstream: admitNode."""
        new = a.obj or {}
        name = a.name or (new.get("metadata") or {}).get("name", "")
        if name != node:
            raise forbidden(a, f"node {_q(node)} is not allowed to modify node {_q(name)}")
        new_labels = (new.get("metadata") or {}).get("labels") or {}
        if a.operation is Operation.CREATE:
            if (new.get("spec") or {}).get("configSource") is not None:
                raise forbidden(a, f"node {_q(node)} is not allowed to create pods with a non-nil configSource")
            if bad := forbidden_labels(modified_labels(new_labels, {})):
                raise forbidden(a, f"node {_q(node)} is not allowed to set the following labels: {', '.join(bad)}")
        elif a.operation is Operation.UPDATE:
            old = a.old_obj or {}
            spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
            if spec.get("configSource") is not None and spec.get("configSource") != old_spec.get("configSource"):
                raise forbidden(a, f"node {_q(node)} is not allowed to update configSource to a new non-nil "
                                   "configSource")
            if (spec.get("taints") or []) != (old_spec.get("taints") or []):
                raise forbidden(a, f"node {_q(node)} is not allowed to modify taints")
            old_labels = (old.get("metadata") or {}).get("labels") or {}
            if new_labels != old_labels and (bad := forbidden_labels(modified_labels(new_labels, old_labels))):
                raise forbidden(a, f"is not allowed to modify labels: {', '.join(bad)}")

    # --- the rest ----------------------------------------------------------------------------

    def admit_pvc_status(self, node: str, a: Attributes) -> None:
        """Only status.capacity, status.conditions and the allocated resources may change.
        Upstream: admitPVCStatus (with RecoverVolumeExpansionFailure on, as 1.37)."""
        if a.operation is not Operation.UPDATE:
            raise forbidden(a, f"unexpected operation {_q(a.operation.value)}")
        if _pvc_without_node_fields(a.old_obj or {}) != _pvc_without_node_fields(a.obj or {}):
            raise forbidden(a, f"node {_q(node)} is not allowed to update fields other than status.quantity and "
                               "status.conditions")

    async def admit_service_account(self, node: str, a: Attributes) -> None:
        """A node's token must be bound to a pod on the node. Upstream: admitServiceAccount."""
        if a.operation is not Operation.CREATE or a.subresource != "token":
            return
        ref = ((a.obj or {}).get("spec") or {}).get("boundObjectRef") or {}
        if ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or not ref.get("name"):
            raise forbidden(a, "node requested token not bound to a pod")
        if not ref.get("uid"):
            raise forbidden(a, "node requested token with a pod binding without a uid")
        pod = await self._get("pods", a.namespace, ref["name"])
        if ref["uid"] != (pod.get("metadata") or {}).get("uid"):
            raise forbidden(a, f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
                               "record. The object might have been deleted and then recreated")
        if (pod.get("spec") or {}).get("nodeName") != node:
            raise forbidden(a, "node requested token bound to a pod scheduled on a different node")

    def admit_lease(self, node: str, a: Attributes) -> None:
        """Upstream: admitLease."""
        if a.namespace != NAMESPACE_NODE_LEASE:
            raise forbidden(a, f"can only access leases in the {_q(NAMESPACE_NODE_LEASE)} system namespace")
        if _name(a) != node:
            raise forbidden(a, "can only access node lease with the same name as the requesting node")

    def admit_csinode(self, node: str, a: Attributes) -> None:
        """Upstream: admitCSINode."""
        if _name(a) != node:
            raise forbidden(a, "can only access CSINode with the same name as the requesting node")

    def admit_resource_slice(self, node: str, a: Attributes) -> None:
        """Upstream: admitResourceSlice (a delete is checked against the stored slice, which the
        validating phase has; the admit phase of a delete has no object and passes)."""
        if a.operation is Operation.CREATE:
            if ((a.obj or {}).get("spec") or {}).get("nodeName") != node:
                raise forbidden(a, "can only create ResourceSlice with the same NodeName as the requesting node")
        elif a.operation is Operation.DELETE and a.old_obj is not None:
            if (a.old_obj.get("spec") or {}).get("nodeName") != node:
                raise forbidden(a, "can only delete ResourceSlice with the same NodeName as the requesting node")

    def admit_csr(self, node: str, a: Attributes) -> None:
        """A kubelet's CSR for a kubelet signer must name the node. Upstream: admitCSR."""
        if a.operation is not Operation.CREATE:
            return
        spec = (a.obj or {}).get("spec") or {}
        if spec.get("signerName") not in KUBELET_SIGNERS:
            return
        cn = _csr_common_name(spec.get("request", ""))
        if cn is None:
            raise forbidden(a, "unable to parse csr: PEM block type must be CERTIFICATE REQUEST")
        if cn != f"system:node:{node}":
            raise forbidden(a, f"can only create a node CSR with CN=system:node:{node}")

    async def _get(self, resource: str, namespace: str, name: str) -> Obj:
        """The stored object (upstream: the lister's), NotFound as upstream returns it."""
        ri = REGISTRY.lookup("", "v1", resource)
        kv = await self.api.storage.get(ri.key(namespace, name)) if ri is not None else None
        if kv is None:
            raise errors.NotFound("", resource, name)
        return kv.obj


def _name(a: Attributes) -> str:
    """The request's name, or on a create the object's (the authorizer cannot see it)."""
    if a.operation is Operation.CREATE:
        return ((a.obj or {}).get("metadata") or {}).get("name", "")
    return a.name


def _claim_statuses(pod: Obj) -> list[tuple[Any, Any]]:
    return [(s.get("name"), s.get("resourceClaimName"))
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()]


_PVC_NODE_STATUS = ("capacity", "conditions", "allocatedResourceStatuses", "allocatedResources")


def _pvc_without_node_fields(pvc: Obj) -> Obj:
    """The PVC less what a node may change and what a write may leave out (resourceVersion,
    managedFields)."""
    meta = {k: v for k, v in (pvc.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    status = {k: v for k, v in (pvc.get("status") or {}).items() if k not in _PVC_NODE_STATUS}
    return {**pvc, "metadata": meta, "status": status}


def modified_labels(a: dict[str, str], b: dict[str, str]) -> set[str]:
    """Keys added, removed or changed. Upstream: getModifiedLabels."""
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k) or (k in a) != (k in b)}


def _label_namespace(key: str) -> str:
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def is_kubelet_label(key: str) -> bool:
    """Upstream: kubeletapis.IsKubeletLabel."""
    if key in KUBELET_LABELS:
        return True
    ns = _label_namespace(key)
    return any(ns == n or ns.endswith("." + n) for n in KUBELET_LABEL_NAMESPACES)


def forbidden_labels(modified: set[str]) -> list[str]:
    """The modified labels a node may not set, sorted. Upstream: getForbiddenLabels."""
    bad = set()
    for label in modified:
        ns = _label_namespace(label)
        if ns == LABEL_NAMESPACE_NODE_RESTRICTION or ns.endswith("." + LABEL_NAMESPACE_NODE_RESTRICTION):
            bad.add(label)
        kubernetes = ns in ("kubernetes.io", "k8s.io") or ns.endswith((".kubernetes.io", ".k8s.io"))
        if kubernetes and not is_kubelet_label(label):
            bad.add(label)
    return sorted(bad)


def _csr_common_name(request: str) -> str | None:
    """The subject CN of a base64 PEM certificate request, None if it does not parse."""
    import base64
    try:
        from cryptography import x509
        from cryptography.x509.oid import NameOID
        csr = x509.load_pem_x509_csr(base64.b64decode(request))
        cns = csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        return str(cns[0].value) if cns else ""
    except Exception:
        return None
