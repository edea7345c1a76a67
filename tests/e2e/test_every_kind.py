"""Every served kind with the real kubectl, in one test: one manifest holding an object of every
kind (tests/e2e/manifests/every-kind.yaml, upstream's documentation examples) → `kubectl apply`
→ `kubectl get -o wide` with upstream's columns → `kubectl describe` → `kubectl apply
--server-side` of a changed copy → `kubectl delete`.

The kinds come from `kubectl api-resources -o wide` at test time: the manifest's documents of
kinds that are not served are left out (resources may be switched off, as upstream's are by
default), and every served resource with the verbs create, get and list must have a document, so
a newly served kind without an example fails here. Kinds without those verbs have no document:
- the create-only reviews (TokenReview, SelfSubjectReview, SubjectAccessReview,
  SelfSubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview): nothing is stored,
  so there is nothing to get, change or delete;
- ComponentStatus (get and list only: it is computed, not stored);
- Binding (pods/binding, create only: it is a subresource of a pod, not listed by
  api-resources).

Upstream's columns: pkg/printers/internalversion/printers.go (AddHandlers), the apiserver's
default NAME / CREATED AT table for the kinds without a printer (rest.NewDefaultTableConvertor),
and kube-aggregator's APIService table.
"""
from __future__ import annotations

import copy
import json
import pathlib
import re
import tempfile
from typing import Any

import yaml

from .cluster import Cluster

NS = "every-kind"
MANIFEST = pathlib.Path(__file__).parent / "manifests" / "every-kind.yaml"
LABEL = "every-kind.example.com/changed"

# `kubectl get -o wide` headers (single-spaced) by (group, kind).
HEADERS = {
    ("", "Namespace"): "NAME STATUS AGE",
    ("", "ConfigMap"): "NAME DATA AGE",
    ("", "Secret"): "NAME TYPE DATA AGE",
    ("", "ServiceAccount"): "NAME SECRETS AGE",
    ("", "Service"): "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR",
    ("", "Pod"): "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES",
    ("", "Node"): "NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME",
    ("", "Event"): "LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME",
    ("", "PodTemplate"): "NAME CONTAINERS IMAGES POD LABELS",
    ("", "ReplicationController"): "NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR",
    ("", "PersistentVolume"): "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS "
                              "VOLUMEATTRIBUTESCLASS REASON AGE VOLUMEMODE",
    ("", "PersistentVolumeClaim"): "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE "
                                   "VOLUMEMODE",
    ("", "LimitRange"): "NAME CREATED AT",
    ("", "ResourceQuota"): "NAME REQUEST LIMIT AGE",
    ("", "Endpoints"): "NAME ENDPOINTS AGE",
    ("apps", "Deployment"): "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR",
    ("apps", "ReplicaSet"): "NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR",
    ("apps", "StatefulSet"): "NAME READY AGE CONTAINERS IMAGES",
    ("apps", "DaemonSet"): "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE CONTAINERS IMAGES "
                           "SELECTOR",
    ("apps", "ControllerRevision"): "NAME CONTROLLER REVISION AGE",
    ("batch", "Job"): "NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR",
    ("batch", "CronJob"): "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE CONTAINERS IMAGES SELECTOR",
    ("autoscaling", "HorizontalPodAutoscaler"): "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE",
    ("policy", "PodDisruptionBudget"): "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE",
    ("events.k8s.io", "Event"): "LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME",
    ("coordination.k8s.io", "Lease"): "NAME HOLDER AGE",
    ("discovery.k8s.io", "EndpointSlice"): "NAME ADDRESSTYPE PORTS ENDPOINTS AGE",
    ("networking.k8s.io", "Ingress"): "NAME CLASS HOSTS ADDRESS PORTS AGE",
    ("networking.k8s.io", "IngressClass"): "NAME CONTROLLER PARAMETERS AGE",
    ("networking.k8s.io", "NetworkPolicy"): "NAME POD-SELECTOR AGE",
    ("networking.k8s.io", "ServiceCIDR"): "NAME CIDRS AGE",
    ("networking.k8s.io", "IPAddress"): "NAME PARENTREF AGE",
    ("rbac.authorization.k8s.io", "Role"): "NAME CREATED AT",
    ("rbac.authorization.k8s.io", "ClusterRole"): "NAME CREATED AT",
    ("rbac.authorization.k8s.io", "RoleBinding"): "NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): "NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS",
    ("certificates.k8s.io", "CertificateSigningRequest"): "NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION",
    ("certificates.k8s.io", "ClusterTrustBundle"): "NAME SIGNERNAME",
    ("certificates.k8s.io", "PodCertificateRequest"): "NAME PODNAME SIGNERNAME AGE",
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): "NAME WEBHOOKS AGE",
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): "NAME WEBHOOKS AGE",
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): "NAME VALIDATIONS PARAMKIND AGE",
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): "NAME POLICYNAME PARAMREF AGE",
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"): "NAME MUTATIONS PARAMKIND AGE",
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"): "NAME POLICYNAME PARAMREF AGE",
    ("apiregistration.k8s.io", "APIService"): "NAME SERVICE AVAILABLE AGE",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "NAME CREATED AT",
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): "NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE "
                                                    "MISSINGPL",
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): "NAME TYPE NOMINALCONCURRENCYSHARES QUEUES "
                                                                    "HANDSIZE QUEUELENGTHLIMIT AGE",
    ("resource.k8s.io", "DeviceClass"): "NAME AGE",
    ("resource.k8s.io", "DeviceTaintRule"): "NAME AGE",
    ("resource.k8s.io", "ResourceClaim"): "NAME STATE AGE",
    ("resource.k8s.io", "ResourceClaimTemplate"): "NAME AGE",
    ("resource.k8s.io", "ResourceSlice"): "NAME NODE DRIVER POOL AGE",
    ("scheduling.k8s.io", "PriorityClass"): "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY",
    ("node.k8s.io", "RuntimeClass"): "NAME HANDLER AGE",
    ("storage.k8s.io", "StorageClass"): "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
    ("storage.k8s.io", "CSIDriver"): "NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS "
                                     "REQUIRESREPUBLISH MODES AGE",
    ("storage.k8s.io", "CSINode"): "NAME DRIVERS AGE",
    ("storage.k8s.io", "CSIStorageCapacity"): "NAME STORAGECLASSNAME CAPACITY",
    ("storage.k8s.io", "VolumeAttachment"): "NAME ATTACHER PV NODE ATTACHED AGE",
    ("storage.k8s.io", "VolumeAttributesClass"): "NAME DRIVERNAME AGE",
    ("storagemigration.k8s.io", "StorageVersionMigration"): "NAME CREATED AT",
}

# Spec changes made by the server-side apply, where one is meaningful: (group, kind) -> (path, value).
# Each is a field the manifest sets: client-side apply's manager owns it and the last-applied
# annotation holds its value, so kubectl's server-side apply takes it over without a conflict.
CHANGES: dict[tuple[str, str], tuple[tuple[str, ...], Any]] = {
    ("", "ConfigMap"): (("data", "player_initial_lives"), "5"),
    ("", "Service"): (("spec", "ports", 0, "targetPort"), 9377),   # type: ignore[dict-item]
    ("apps", "Deployment"): (("spec", "replicas"), 2),
    ("apps", "StatefulSet"): (("spec", "minReadySeconds"), 5),
    ("batch", "CronJob"): (("spec", "schedule"), "*/5 * * * *"),
    ("autoscaling", "HorizontalPodAutoscaler"): (("spec", "maxReplicas"), 5),
    ("policy", "PodDisruptionBudget"): (("spec", "minAvailable"), 1),
    ("coordination.k8s.io", "Lease"): (("spec", "holderIdentity"), "example-controller-7d9f8b6c5-k8m2p"),
    ("networking.k8s.io", "IngressClass"): (("spec", "parameters", "name"), "internal-lb"),
    ("scheduling.k8s.io", "PriorityClass"): (("description",), "Changed by server-side apply."),
    ("storage.k8s.io", "CSIDriver"): (("spec", "requiresRepublish"), False),
}

# Atomic fields the server defaults inside (an Endpoints port's protocol, an RBAC subject's
# apiGroup, a rule's scope, a device request's allocationMode, ...): the applied copy differs
# from the object, and the last-applied annotation too, so a server-side apply of the manifest
# conflicts with client-side apply's manager on them, upstream as here. The second apply forces.
ATOMIC_DEFAULTED = {".subsets", ".roleRef", ".subjects", ".spec.matchConstraints", ".spec.matchResources",
                    ".spec.volumeClaimTemplates", ".spec.devices.requests", ".spec.spec.devices.requests"}


def _group(doc: dict[str, Any]) -> str:
    api_version = doc["apiVersion"]
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _prefix(group: str, kind: str) -> str:
    """How kubectl names an object's type in its output: `deployment.apps`, `configmap`."""
    return kind.lower() + (f".{group}" if group else "")


def _api_resources(cluster: Cluster) -> list[dict[str, Any]]:
    """`kubectl api-resources -o wide`, its columns cut where the header's columns start."""
    header, *lines = cluster.kubectl("api-resources", "-o", "wide").stdout.splitlines()
    names = ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"]
    starts = [header.index(n) for n in names] + [None]
    resources = []
    for line in lines:
        cell = {n: line[starts[i]:starts[i + 1]].strip() for i, n in enumerate(names)}
        api_version = cell["APIVERSION"]
        resources.append({"name": cell["NAME"], "kind": cell["KIND"], "namespaced": cell["NAMESPACED"] == "true",
                          "group": api_version.rsplit("/", 1)[0] if "/" in api_version else "",
                          "verbs": set(cell["VERBS"].split(","))})
    return resources


def _tables(out: str, prefixes: set[str]) -> dict[str, tuple[str, set[str]]]:
    """kubectl's multi-resource table output: header (single-spaced) and the names in its NAME
    column ("kind.group/name"), by the names' type prefix."""
    tables = {}
    for block in out.strip().split("\n\n"):
        header, *rows = block.splitlines()
        at = re.search(r"(?:^|\s)NAME(?:\s|$)", header)
        assert at, header
        start = at.start() + (1 if header[at.start()].isspace() else 0)
        names = {row[start:].split()[0] for row in rows}
        prefix = next(iter(names)).split("/", 1)[0]
        assert prefix in prefixes, (prefix, header)
        tables[prefix] = (" ".join(header.split()), names)
    return tables


def _write(docs: list[dict[str, Any]], path: pathlib.Path) -> str:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


def _changed(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"].setdefault("labels", {})[LABEL] = "true"
    change = CHANGES.get((_group(doc), doc["kind"]))
    if change:
        *path, last = change[0]
        target = doc
        for key in path:
            target = target[key]
        target[last] = change[1]
    return doc


def _lookup(obj: dict[str, Any], path: tuple[Any, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def test_every_served_kind_applies_lists_describes_changes_and_deletes(cluster: Cluster) -> None:
    served = [r for r in _api_resources(cluster) if {"create", "get", "list"} <= r["verbs"]]
    by_kind = {(r["group"], r["kind"]): r for r in served}
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    kept = [d for d in docs if (_group(d), d["kind"]) in by_kind]
    covered = {(_group(d), d["kind"]) for d in kept}
    assert sorted(set(by_kind) - covered) == [], "served kinds without a document in every-kind.yaml"
    assert sorted(covered - set(HEADERS)) == [], "kinds without upstream's columns in HEADERS"
    for d in kept:                                   # namespaced objects in the test namespace, others not
        assert d["metadata"].get("namespace") == (NS if by_kind[(_group(d), d["kind"])]["namespaced"] else None), d
    objects = {(_prefix(_group(d), d["kind"]), d["metadata"]["name"]) for d in kept}
    assert len(objects) == len(kept)

    with tempfile.TemporaryDirectory(prefix="every-kind-") as tmp:
        manifest = _write(kept, pathlib.Path(tmp) / "every-kind.yaml")
        changed = _write([_changed(d) for d in kept], pathlib.Path(tmp) / "changed.yaml")

        # apply: every object created by one command.
        out = cluster.kubectl("apply", "-f", manifest).stdout
        created = {tuple(line.removesuffix(" created").split("/", 1)) for line in out.splitlines()}
        assert created == objects, out

        # get -o wide: upstream's columns, each object listed.
        resources = ",".join(f"{by_kind[k]['name']}.{k[0]}".rstrip(".") for k in sorted(covered))
        prefixes = {_prefix(*k) for k in covered}
        tables = _tables(cluster.kubectl("get", resources, "-n", NS, "-o", "wide").stdout, prefixes)
        assert {p: h for p, (h, _) in tables.items()} == {_prefix(*k): HEADERS[k] for k in covered}
        listed = {tuple(n.split("/", 1)) for _, names in tables.values() for n in names}
        assert objects <= listed, sorted(objects - listed)

        # describe: every object, by name.
        described = cluster.kubectl("describe", "-f", manifest).stdout
        names = set(re.findall(r"^Name:\s+(\S+)$", described, re.MULTILINE))
        assert {name for _, name in objects} <= names, sorted({n for _, n in objects} - names)

        # apply --server-side of a changed copy: the label (and spec changes) on every object, and
        # kubectl's Apply entry in its managedFields.
        first = cluster.kubectl("apply", "--server-side", "-f", changed, check=False)
        conflicts = set(re.findall(r'^Apply failed with \d+ conflicts?: conflicts? with "kubectl-client-side-apply" '
                                   r'using [^:]+:\s*(?:- )?(\S+)', first.stderr, re.MULTILINE))
        assert conflicts <= ATOMIC_DEFAULTED, first.stderr
        forced = cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", changed)
        # kubectl hands client-side apply's fields to its own manager, then applies again: that
        # re-apply must not fail (it prunes what kubectl no longer sets).
        assert "failed to re-apply" not in first.stderr + forced.stderr, first.stderr + forced.stderr
        out = first.stdout + forced.stdout
        applied = {tuple(line.removesuffix(" serverside-applied").split("/", 1)) for line in out.splitlines()}
        assert applied == objects, out
        live = json.loads(cluster.kubectl("get", "-f", changed, "-o", "json", "--show-managed-fields").stdout)["items"]
        assert len(live) == len(kept)
        for obj in live:
            what = f"{obj['kind']} {obj['metadata']['name']}"
            assert obj["metadata"]["labels"][LABEL] == "true", what
            assert any(e["manager"] == "kubectl" and e["operation"] == "Apply"
                       for e in obj["metadata"]["managedFields"]), (what, obj["metadata"]["managedFields"])
            change = CHANGES.get((_group(obj), obj["kind"]))
            if change:
                assert _lookup(obj, change[0]) == change[1], what

        # delete: every object gone (kubectl waits for each, finalizers included); the Service's
        # Endpoints may be gone first, deleted by the endpoints controller with their Service.
        out = cluster.kubectl("delete", "-f", manifest, "--timeout=60s", "--ignore-not-found", timeout=120).stdout
        deleted = set(re.findall(r'^(\S+) "([^"]+)" deleted', out, re.MULTILINE))
        assert deleted <= objects and objects - deleted <= {("endpoints", "my-service")}, out
        left = cluster.kubectl("get", "-f", manifest, "--ignore-not-found", "-o", "name").stdout
        assert left == "", left
