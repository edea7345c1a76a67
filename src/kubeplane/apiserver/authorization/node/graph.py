"""The node authorizer's graph: which objects lead to which node.

Vertices are (type, namespace, name); an edge points from an object to what uses it, and every
chain ends at a node:

    pod -> node                       (the pod is bound to it)
    secret, configmap, serviceaccount, pvc, resourceclaim -> pod
    pv -> pvc, secret -> pv           (a PV's secrets reach the pods of its claim)
    volumeattachment -> node, resourceslice -> node

An edge into a pod is labelled with the pod's node (upstream's destinationEdge), and every
vertex counts the node labels of its out-edges (`dest`, upstream's destinationEdgeIndex, which
upstream keeps only past 200 edges; here always: a dict increment per edge). For every type but
secret and pv all out-edges are labelled, so the count is the whole answer (upstream's
vertexTypeWithAuthoritativeIndex); a secret or pv may reach a node through a pv and a pvc, so a
miss there walks the graph. A vertex left without edges is dropped, so the graph holds only
what some bound pod (or PV, attachment, slice) names.

Upstream: Graph, AddPod, DeletePod, AddPV, AddVolumeAttachment, AddResourceSlice, and
NodeAuthorizer.hasPathFrom (plugin/pkg/auth/authorizer/node/graph.go, node_authorizer.go);
VisitPodSecretNames, VisitPodConfigmapNames (pkg/api/pod/util.go), VisitPVSecretNames
(pkg/api/v1/persistentvolume/util.go), ephemeral.VolumeClaimName and resourceclaim.Name.
"""
from __future__ import annotations

from typing import Any, Iterator

Obj = dict[str, Any]

# Upstream's vertexType constants, and their names in messages (vertexTypes).
CONFIGMAP, SLICE, NODE, POD, PVC, PV, RESOURCECLAIM, SECRET, VA, SERVICEACCOUNT = range(10)
VERTEX_TYPES = {CONFIGMAP: "configmap", SLICE: "resourceslice", NODE: "node", POD: "pod", PVC: "pvc",
                PV: "pv", RESOURCECLAIM: "resourceclaim", SECRET: "secret", VA: "volumeattachment",
                SERVICEACCOUNT: "serviceAccount"}
# Types whose out-edges all carry a node (vertexTypeWithAuthoritativeIndex): `dest` is the answer.
AUTHORITATIVE = frozenset({CONFIGMAP, SLICE, POD, PVC, RESOURCECLAIM, VA, SERVICEACCOUNT})

MIRROR_POD_ANNOTATION_KEY = "kubernetes.io/config.mirror"

Key = tuple[int, str, str]


class Vertex:
    """One object. `out`: the vertices it leads to -> the node labelling that edge (None for
    pv -> pvc and secret -> pv); `inc`: the vertices leading to it; `dest`: node vertex -> how
    many labelled out-edges carry it."""
    __slots__ = ("key", "out", "inc", "dest")

    def __init__(self, key: Key) -> None:
        self.key = key
        self.out: dict[Vertex, Vertex | None] = {}
        self.inc: set[Vertex] = set()
        self.dest: dict[Vertex, int] = {}


class Graph:
    """Invariants: u.out has v iff v.inc has u; u.dest[n] == the number of u.out values that are n
    (no zero entries); every vertex in `vertices` has an edge (an edgeless one is dropped)."""

    def __init__(self) -> None:
        self.vertices: dict[Key, Vertex] = {}

    # --- questions ---------------------------------------------------------------------------

    def has_path_from(self, node_name: str, vtype: int, namespace: str, name: str) -> bool:
        """Whether the object leads to the node. Upstream: NodeAuthorizer.hasPathFrom."""
        node = self.vertices.get((NODE, "", node_name))
        start = self.vertices.get((vtype, namespace, name))
        if node is None or start is None:
            return False
        if start.dest.get(node):
            return True
        return vtype not in AUTHORITATIVE and self._walk(start, node)

    def why_not(self, node_name: str, vtype: int, namespace: str, name: str) -> str:
        """Why has_path_from is false, as upstream logs it (its 403 says only "no relationship")."""
        what = f"{VERTEX_TYPES[vtype]} {namespace}/{name}"
        if (NODE, "", node_name) not in self.vertices:
            return f"unknown node '{node_name}' cannot get {what}"
        if (vtype, namespace, name) not in self.vertices:
            return f"node '{node_name}' cannot get unknown {what}"
        return f"node '{node_name}' cannot get {what}, no relationship to this object was found in the node authorizer graph"

    @staticmethod
    def _walk(start: Vertex, node: Vertex) -> bool:
        """Depth first along out-edges, never along an edge labelled with another node."""
        seen, stack = {start}, [start]
        while stack:
            v = stack.pop()
            for to, dest in v.out.items():
                if dest is not None and dest is not node:
                    continue
                if to is node or dest is node or to.dest.get(node):
                    return True
                if to not in seen:
                    seen.add(to)
                    stack.append(to)
        return False

    # --- changes -----------------------------------------------------------------------------

    def add_pod(self, pod: Obj) -> None:
        """Replace the pod's edges: pod -> node, and the objects it names -> pod (none for a
        mirror pod: a node must not gain access to anything by creating one).
        Upstream: Graph.AddPod."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        self._delete_vertex((POD, ns, name))
        p = self._vertex((POD, ns, name))
        node = self._vertex((NODE, "", spec.get("nodeName", "")))
        self._add_edge(p, node, node)
        if MIRROR_POD_ANNOTATION_KEY in (meta.get("annotations") or {}):
            return
        # Imported here: the admission plugins (NodeRestriction) import this module.
        from ....api.pod_visitors import pod_secret_names
        refs: list[Key] = []
        if sa := spec.get("serviceAccountName"):
            refs.append((SERVICEACCOUNT, ns, sa))
        refs.extend((SECRET, ns, s) for s in pod_secret_names(spec) if s)
        refs.extend((CONFIGMAP, ns, c) for c in pod_configmap_names(spec) if c)
        refs.extend((PVC, ns, c) for c in pod_claim_names(pod) if c)
        refs.extend((RESOURCECLAIM, ns, c) for c in pod_resource_claim_names(pod) if c)
        for key in refs:
            self._add_edge(self._vertex(key), p, node)

    def delete_pod(self, namespace: str, name: str) -> None:
        """Upstream: Graph.DeletePod."""
        self._delete_vertex((POD, namespace, name))

    def add_pv(self, pv: Obj) -> None:
        """pv -> its claim, and its kubelet-visible secrets -> pv. Upstream: Graph.AddPV."""
        name = (pv.get("metadata") or {}).get("name", "")
        self._delete_vertex((PV, "", name))
        claim = (pv.get("spec") or {}).get("claimRef")
        if not claim:
            return
        v = self._vertex((PV, "", name))
        self._add_edge(v, self._vertex((PVC, claim.get("namespace", ""), claim.get("name", ""))), None)
        for ns, secret, kubelet_visible in pv_secret_names(pv):
            if kubelet_visible and secret:
                self._add_edge(self._vertex((SECRET, ns, secret)), v, None)

    def delete_pv(self, name: str) -> None:
        self._delete_vertex((PV, "", name))

    def add_to_node(self, vtype: int, name: str, node_name: str) -> None:
        """A volume attachment or resource slice -> its node. Upstream: AddVolumeAttachment,
        AddResourceSlice."""
        self._delete_vertex((vtype, "", name))
        if node_name:
            node = self._vertex((NODE, "", node_name))
            self._add_edge(self._vertex((vtype, "", name)), node, node)

    def delete(self, vtype: int, namespace: str, name: str) -> None:
        self._delete_vertex((vtype, namespace, name))

    # --- the structure -----------------------------------------------------------------------

    def _vertex(self, key: Key) -> Vertex:
        v = self.vertices.get(key)
        if v is None:
            v = self.vertices[key] = Vertex(key)
        return v

    @staticmethod
    def _add_edge(frm: Vertex, to: Vertex, dest: Vertex | None) -> None:
        if to in frm.out:                      # a simple graph: one edge per pair
            return
        frm.out[to] = dest
        to.inc.add(frm)
        if dest is not None:
            frm.dest[dest] = frm.dest.get(dest, 0) + 1

    def _delete_vertex(self, key: Key) -> None:
        """Remove a vertex and its edges, and the neighbours left without any.
        Upstream: Graph.deleteVertexLocked."""
        v = self.vertices.pop(key, None)
        if v is None:
            return
        for to in v.out:
            to.inc.discard(v)
            self._drop_if_edgeless(to)
        for frm in v.inc:
            dest = frm.out.pop(v)
            if dest is not None:
                n = frm.dest[dest] - 1
                if n:
                    frm.dest[dest] = n
                else:
                    del frm.dest[dest]
            self._drop_if_edgeless(frm)

    def _drop_if_edgeless(self, v: Vertex) -> None:
        if not v.out and not v.inc:
            self.vertices.pop(v.key, None)


def pod_configmap_names(spec: Obj) -> Iterator[str]:
    """Every configmap the pod spec names. Upstream: VisitPodConfigmapNames (all containers)."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or ():
            for env_from in c.get("envFrom") or ():
                if env_from.get("configMapRef") is not None:
                    yield env_from["configMapRef"].get("name", "")
            for env in c.get("env") or ():
                ref = (env.get("valueFrom") or {}).get("configMapKeyRef")
                if ref is not None:
                    yield ref.get("name", "")
    for v in spec.get("volumes") or ():
        if v.get("configMap") is not None:
            yield v["configMap"].get("name", "")
        for p in (v.get("projected") or {}).get("sources") or ():
            if p.get("configMap") is not None:
                yield p["configMap"].get("name", "")


def pod_claim_names(pod: Obj) -> Iterator[str]:
    """The PVCs of the pod's volumes: a persistentVolumeClaim's claimName, or the claim of an
    ephemeral volume, <pod>-<volume> (upstream: ephemeral.VolumeClaimName)."""
    pod_name = (pod.get("metadata") or {}).get("name", "")
    for v in (pod.get("spec") or {}).get("volumes") or ():
        if v.get("persistentVolumeClaim") is not None:
            yield v["persistentVolumeClaim"].get("claimName", "")
        elif v.get("ephemeral") is not None:
            yield f"{pod_name}-{v.get('name', '')}"


def pod_resource_claim_names(pod: Obj) -> Iterator[str]:
    """The ResourceClaims the pod uses: named ones, those generated from a template once the
    pod's status names them (upstream: resourceclaim.Name; a claim not generated yet grants
    nothing), and the extended-resource claim of its status."""
    status = pod.get("status") or {}
    generated = {s.get("name"): s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or ()}
    for c in (pod.get("spec") or {}).get("resourceClaims") or ():
        if c.get("resourceClaimName"):
            yield c["resourceClaimName"]
        elif c.get("resourceClaimTemplateName") and generated.get(c.get("name")):
            yield generated[c.get("name")]
    if name := (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName"):
        yield name


# PV sources with a namespaced secret reference, visible to the kubelet. Upstream:
# VisitPVSecretNames — a reference's namespace, else the claim's (previously persisted PVs).
_PV_SECRET_REFS = ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos")
# A CSI source's references, and whether the kubelet reads them (the controller ones it does not).
_CSI_SECRET_REFS = (("controllerPublishSecretRef", False), ("nodeStageSecretRef", True),
                    ("nodePublishSecretRef", True), ("controllerExpandSecretRef", False),
                    ("nodeExpandSecretRef", True))


def pv_secret_names(pv: Obj) -> Iterator[tuple[str, str, bool]]:
    """(namespace, name, kubelet visible) of every secret a PV names. Upstream: VisitPVSecretNames."""
    spec = pv.get("spec") or {}
    claim_ns = (spec.get("claimRef") or {}).get("namespace", "")
    if (az := spec.get("azureFile")) is not None:
        yield az.get("secretNamespace") or claim_ns, az.get("secretName", ""), True
    for source in _PV_SECRET_REFS:
        ref = (spec.get(source) or {}).get("secretRef")
        if ref is not None:
            yield ref.get("namespace") or claim_ns, ref.get("name", ""), True
    csi = spec.get("csi") or {}
    for field, visible in _CSI_SECRET_REFS:
        if (ref := csi.get(field)) is not None:
            yield ref.get("namespace", ""), ref.get("name", ""), visible
