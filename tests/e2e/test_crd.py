"""Real kubectl against `kubeplane up --nodes 0`: CustomResourceDefinitions.

A CRD applied with kubectl is Established at once and its kind served: custom objects applied,
listed (by plural, short name, category), printed with their columns and deleted; a second
CRD claiming the same names is refused in its NamesAccepted condition; deleting a CRD deletes
its objects first.
"""
from __future__ import annotations

import json
import re

import yaml

from .cluster import Cluster, eventually


def crd(plural: str, kind: str, group: str = "stable.example.com", *, short: list[str] | None = None,
        columns: bool = True) -> str:
    version = {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {"cronSpec": {"type": "string"},
                                                             "replicas": {"type": "integer"}}},
                   "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}
    if columns:
        version["additionalPrinterColumns"] = [
            {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced", "versions": [version],
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                           "shortNames": short or [], "categories": ["all"]}}})


CRON_TAB = """apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-new-cron-object
spec:
  cronSpec: "* * * * */5"
  replicas: 2
"""


def _table(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines() if line.strip()]


def _condition(cluster: Cluster, name: str, type_: str) -> dict:
    obj = cluster.get_json("crd", name)
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), {})


def test_crd_apply_established_custom_objects_served(cluster: Cluster) -> None:
    out = cluster.kubectl("apply", "-f", "-", input=crd("crontabs", "CronTab", short=["ct"])).stdout
    assert "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created" in out
    cluster.kubectl("wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=20s")
    names = _condition(cluster, "crontabs.stable.example.com", "NamesAccepted")
    assert (names["status"], names["reason"], names["message"]) == ("True", "NoConflicts", "no conflicts found")
    est = _condition(cluster, "crontabs.stable.example.com", "Established")
    assert (est["status"], est["reason"]) == ("True", "InitialNamesAccepted")

    assert "crontab.stable.example.com/my-new-cron-object created" in \
        cluster.kubectl("apply", "-f", "-", input=CRON_TAB).stdout
    rows = _table(cluster.kubectl("get", "crontabs").stdout)
    assert rows[0] == ["NAME", "SPEC", "REPLICAS", "AGE"]
    assert rows[1][:3] == ["my-new-cron-object", "* * * * */5", "2"]
    assert _table(cluster.kubectl("get", "ct").stdout)[1][0] == "my-new-cron-object"
    assert "crontab.stable.example.com/my-new-cron-object" in cluster.kubectl("get", "all").stdout
    obj = yaml.safe_load(cluster.kubectl("get", "crontab", "my-new-cron-object", "-o", "yaml").stdout)
    assert obj["spec"] == {"cronSpec": "* * * * */5", "replicas": 2}
    assert obj["metadata"]["generation"] == 1

    resources = cluster.kubectl("api-resources", "--api-group=stable.example.com").stdout
    assert re.search(r"crontabs\s+ct\s+stable.example.com/v1\s+true\s+CronTab", resources), resources
    rows = _table(cluster.kubectl("get", "crd").stdout)
    assert rows[0] == ["NAME", "CREATED AT"] and "crontabs.stable.example.com" in [r[0] for r in rows]

    # an unchanged apply changes nothing; a changed one bumps generation (status is a subresource)
    assert "unchanged" in cluster.kubectl("apply", "-f", "-", input=CRON_TAB).stdout
    cluster.kubectl("apply", "-f", "-", input=CRON_TAB.replace("replicas: 2", "replicas: 3"))
    cluster.kubectl("patch", "crontab", "my-new-cron-object", "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": {"ready": True}}))
    obj = cluster.get_json("crontab", "my-new-cron-object")
    assert (obj["spec"]["replicas"], obj["status"], obj["metadata"]["generation"]) == (3, {"ready": True}, 2)
    cluster.kubectl("apply", "--server-side", "--field-manager=e2e", "--force-conflicts", "-f", "-",
                    input=CRON_TAB.replace("replicas: 2", "replicas: 4"))
    assert cluster.get_json("crontab", "my-new-cron-object")["spec"]["replicas"] == 4

    assert 'crontab.stable.example.com "my-new-cron-object" deleted' in \
        cluster.kubectl("delete", "crontab", "my-new-cron-object").stdout
    assert "No resources found" in cluster.kubectl("get", "crontabs").stderr


def test_name_conflict_reported_in_names_accepted(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=crd("widgets", "Widget", "conflict.example.com", short=["wd"]))
    cluster.kubectl("wait", "--for=condition=Established", "crd/widgets.conflict.example.com", "--timeout=20s")
    # another CRD of the group whose singular is the first one's plural
    second = yaml.safe_load(crd("gadgets", "Gadget", "conflict.example.com"))
    second["spec"]["names"]["singular"] = "widgets"
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(second))

    def refused() -> dict:
        cond = _condition(cluster, "gadgets.conflict.example.com", "NamesAccepted")
        assert cond.get("status") == "False", cond
        return cond
    cond = eventually(refused, "NamesAccepted False")
    assert (cond["reason"], cond["message"]) == ("SingularConflict", '"widgets" is already in use')
    assert _condition(cluster, "gadgets.conflict.example.com", "Established")["status"] == "False"


def test_deleting_a_crd_deletes_its_objects_and_its_kind(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=crd("backups", "Backup", "gone.example.com", columns=False))
    cluster.kubectl("wait", "--for=condition=Established", "crd/backups.gone.example.com", "--timeout=20s")
    for name in ("one", "two"):
        cluster.kubectl("apply", "-f", "-", input=f"apiVersion: gone.example.com/v1\nkind: Backup\n"
                                                   f"metadata:\n  name: {name}\nspec:\n  replicas: 1\n")
    assert _table(cluster.kubectl("get", "backups").stdout)[0] == ["NAME", "AGE"]
    cluster.kubectl("delete", "crd", "backups.gone.example.com", "--timeout=30s")

    def gone() -> bool:
        res = cluster.kubectl("get", "--raw", "/apis/gone.example.com/v1", check=False)
        return res.returncode != 0 and "NotFound" in res.stderr
    eventually(gone, "the Backup kind gone")
    res = cluster.kubectl("get", "crd", "backups.gone.example.com", check=False)
    assert res.returncode != 0 and "NotFound" in res.stderr
    assert "backups" not in cluster.kubectl("api-resources", "--api-group=gone.example.com").stdout
    # re-created, the kind starts empty: its objects were deleted with the CRD
    cluster.kubectl("apply", "-f", "-", input=crd("backups", "Backup", "gone.example.com", columns=False))
    cluster.kubectl("wait", "--for=condition=Established", "crd/backups.gone.example.com", "--timeout=20s")
    listed = json.loads(cluster.kubectl("get", "--raw", "/apis/gone.example.com/v1/backups").stdout)
    assert listed["items"] == []
