"""Real kubectl against `kubeplane up --nodes 0`: networking.k8s.io/v1 (Ingress, IngressClass,
NetworkPolicy, ServiceCIDR, IPAddress), policy/v1 PodDisruptionBudget, autoscaling/v2 and v1
HorizontalPodAutoscaler, scheduling.k8s.io/v1 PriorityClass, node.k8s.io/v1 RuntimeClass.

The manifest (netpolicy_kinds.yaml) holds upstream's documentation examples of each kind.
"""
from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import yaml

from .cluster import Cluster, eventually

MANIFEST = str(pathlib.Path(__file__).with_name("netpolicy_kinds.yaml"))
KINDS = "ingressclass,ingress,netpol,servicecidr,ipaddress,pdb,hpa,priorityclass,runtimeclass"


def _table(text: str) -> list[list[str]]:
    """`kubectl get` output as rows of cells (columns split on runs of 2+ spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines() if line.strip()]


def _invalid(cluster: Cluster, doc: dict | str, *args: str) -> str:
    text = doc if isinstance(doc, str) else yaml.safe_dump(doc)
    res = cluster.kubectl(*(args or ("apply", "-f", "-")), input=text, check=False)
    assert res.returncode != 0, res.stdout
    return res.stderr


def test_documentation_examples_apply_get_describe_server_side_apply_delete(cluster: Cluster) -> None:
    out = cluster.kubectl("apply", "-f", MANIFEST).stdout
    assert "horizontalpodautoscaler.autoscaling/php-apache created" in out
    assert "priorityclass.scheduling.k8s.io/high-priority created" in out

    got = cluster.kubectl("get", KINDS).stdout          # one table per kind, in the order asked
    assert _table(got.split("\n\n")[0])[0] == ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]
    assert ["ingressclass.networking.k8s.io/external-lb", "example.com/ingress-controller",
            "IngressParameters.k8s.example.com/external-lb"] == _table(got.split("\n\n")[0])[1][:3]

    ing = _table(cluster.kubectl("get", "ingress", "minimal-ingress").stdout)
    assert ing[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert ing[1][:4] == ["minimal-ingress", "nginx-example", "*", "80"]
    netpol = _table(cluster.kubectl("get", "netpol").stdout)
    assert netpol[0] == ["NAME", "POD-SELECTOR", "AGE"] and netpol[1][:2] == ["test-network-policy", "role=db"]
    cidr = _table(cluster.kubectl("get", "servicecidr", "newcidr1").stdout)
    assert cidr[0] == ["NAME", "CIDRS", "AGE"] and cidr[1][:2] == ["newcidr1", "10.100.0.0/24"]
    ip = _table(cluster.kubectl("get", "ipaddress", "10.100.0.10").stdout)
    assert ip[0] == ["NAME", "PARENTREF", "AGE"] and ip[1][:2] == ["10.100.0.10", "services/default/my-service"]
    pdb = _table(cluster.kubectl("get", "pdb", "zk-pdb", "-o", "wide").stdout)
    assert pdb[0] == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    assert pdb[1][:4] == ["zk-pdb", "2", "N/A", "0"]
    hpa = _table(cluster.kubectl("get", "hpa", "php-apache", "-o", "wide").stdout)
    assert hpa[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert hpa[1][:6] == ["php-apache", "Deployment/php-apache", "cpu: <unknown>/50%", "1", "10", "0"]
    pc = _table(cluster.kubectl("get", "pc", "high-priority", "-o", "wide").stdout)
    assert pc[0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    assert pc[1][:3] == ["high-priority", "1000000", "false"] and pc[1][4] == "PreemptLowerPriority"
    rc = _table(cluster.kubectl("get", "runtimeclass").stdout)
    assert rc[0] == ["NAME", "HANDLER", "AGE"] and rc[1][:2] == ["myclass", "myconfiguration"]

    # Defaults and strategies, as upstream stores them.
    np = cluster.get_json("netpol", "test-network-policy")
    assert np["spec"]["policyTypes"] == ["Ingress", "Egress"] and np["metadata"]["generation"] == 1
    # The disruption controller's status: minAvailable 2 and no zookeeper pod, nothing allowed.
    def pdb_status() -> dict[str, Any]:
        return dict(cluster.get_json("pdb", "zk-pdb")["status"])
    status = eventually(lambda: (s := pdb_status()).get("observedGeneration") == 1 and s, "the budget's status")
    cond = status.pop("conditions")
    assert status == {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 2, "expectedPods": 0,
                      "observedGeneration": 1}
    assert [(c["type"], c["status"], c["reason"], c["observedGeneration"]) for c in cond] == [
        ("DisruptionAllowed", "False", "InsufficientPods", 1)]
    hpa_obj = cluster.get_json("hpa", "php-apache")
    assert hpa_obj["status"] == {"desiredReplicas": 0, "currentMetrics": None}
    assert "generation" not in hpa_obj["metadata"]

    describe = cluster.kubectl("describe", "hpa", "php-apache").stdout
    assert "Reference:" in describe and "<unknown> / 50%" in describe and "Max replicas:" in describe
    describe = cluster.kubectl("describe", "pdb", "zk-pdb").stdout
    assert "Min available:  2" in describe and "Selector:       app=zookeeper" in describe
    describe = cluster.kubectl("describe", "netpol", "test-network-policy").stdout
    assert "To Port: 6379/TCP" in describe and "Except: 172.17.1.0/24" in describe
    describe = cluster.kubectl("describe", "ingress", "minimal-ingress").stdout
    assert "Ingress Class:    nginx-example" in describe and "/testpath" in describe
    for kind, name in (("ingressclass", "external-lb"), ("servicecidr", "newcidr1"), ("pc", "high-priority"),
                       ("runtimeclass", "myclass"), ("ipaddress", "10.100.0.10")):
        assert name in cluster.kubectl("describe", kind, name).stdout

    # Server-side apply of a change, then delete.
    changed = pathlib.Path(MANIFEST).read_text().replace("minAvailable: 2", "minAvailable: 3").replace("maxReplicas: 10",
                                                                                          "maxReplicas: 7")
    out = cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=changed).stdout
    assert "poddisruptionbudget.policy/zk-pdb serverside-applied" in out
    pdb_obj = cluster.get_json("pdb", "zk-pdb")
    assert pdb_obj["spec"]["minAvailable"] == 3 and pdb_obj["metadata"]["generation"] == 2
    assert cluster.get_json("hpa", "php-apache")["spec"]["maxReplicas"] == 7
    out = cluster.kubectl("delete", "-f", MANIFEST).stdout
    assert 'runtimeclass.node.k8s.io "myclass" deleted' in out
    left = cluster.kubectl("get", "ingress,netpol,pdb,hpa,runtimeclass", "--ignore-not-found").stdout
    assert left.strip() == ""


def test_system_priority_classes_exist_at_start(cluster: Cluster) -> None:
    node = cluster.get_json("priorityclass", "system-node-critical")
    assert node["value"] == 2000001000 and node["preemptionPolicy"] == "PreemptLowerPriority"
    assert node["description"] == "Used for system critical pods that must not be moved from their current node."
    assert cluster.get_json("priorityclass", "system-cluster-critical")["value"] == 2000000000


def test_autoscaling_v1_and_v2_are_one_resource(cluster: Cluster) -> None:
    groups = json.loads(cluster.kubectl("get", "--raw", "/apis/autoscaling").stdout)
    assert [v["version"] for v in groups["versions"]] == ["v2", "v1"]
    assert groups["preferredVersion"]["version"] == "v2"
    assert "horizontalpodautoscalers   hpa          autoscaling/v2" in cluster.kubectl(
        "api-resources", "--api-group=autoscaling").stdout

    cluster.kubectl("create", "deployment", "hpa-web", "--image", "nginx")
    out = cluster.kubectl("autoscale", "deployment", "hpa-web", "--cpu=60%", "--min=2", "--max=5").stdout
    assert out.strip() == "horizontalpodautoscaler.autoscaling/hpa-web autoscaled"
    v1 = json.loads(cluster.kubectl("get", "--raw",
                                    "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/hpa-web").stdout)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": {"kind": "Deployment", "name": "hpa-web", "apiVersion": "apps/v1"},
                          "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}
    assert v1["status"] == {"currentReplicas": 0, "desiredReplicas": 0}

    # A v2 object v1 cannot hold: the memory metric and the behavior travel in annotations.
    cluster.apply_yaml({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                        "metadata": {"name": "mem"},
                        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "hpa-web"},
                                 "maxReplicas": 4,
                                 "metrics": [{"type": "Resource", "resource": {"name": "memory", "target": {
                                     "type": "AverageValue", "averageValue": "100Mi"}}}],
                                 "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}})
    path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/mem"
    v1 = json.loads(cluster.kubectl("get", "--raw", path).stdout)
    annotations = v1["metadata"]["annotations"]
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}]
    behavior = json.loads(annotations["autoscaling.alpha.kubernetes.io/behavior"])
    assert behavior["ScaleDown"]["StabilizationWindowSeconds"] == 60
    assert behavior["ScaleUp"]["Policies"][0] == {"Type": "Pods", "Value": 4, "PeriodSeconds": 15}
    assert "targetCPUUtilizationPercentage" not in v1["spec"]

    # A v1 client writes the object back (a label added): nothing v2 had is lost.
    v1["metadata"]["labels"] = {"touched": "yes"}
    cluster.kubectl("replace", "-f", "-", input=json.dumps(v1))
    v2 = cluster.get_json("hpa", "mem")
    assert v2["metadata"]["labels"] == {"touched": "yes"}
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "memory", "target": {
        "type": "AverageValue", "averageValue": "100Mi"}}}]
    assert v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 60
    assert not any(k.startswith("autoscaling.alpha") for k in v2["metadata"].get("annotations", {}))

    # A v1 object without a CPU target gets v1's implicit 80%.
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "old"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "hpa-web"}, "maxReplicas": 3}}))
    v2 = cluster.get_json("hpa", "old")
    assert v2["spec"]["minReplicas"] == 1
    assert v2["spec"]["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 80}
    rows = _table(cluster.kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "old").stdout)
    assert rows[1][:5] == ["old", "Deployment/hpa-web", "cpu: <unknown>/80%", "1", "3"]


def test_create_pdb_priorityclass_ingress_commands(cluster: Cluster) -> None:
    out = cluster.kubectl("create", "pdb", "rails-pdb", "--selector=app=rails", "--max-unavailable=25%").stdout
    assert out.strip() == "poddisruptionbudget.policy/rails-pdb created"
    rows = _table(cluster.kubectl("get", "pdb", "rails-pdb").stdout)
    assert rows[1][:4] == ["rails-pdb", "N/A", "25%", "0"]
    cluster.kubectl("create", "priorityclass", "batch-low", "--value=10", "--preemption-policy=Never")
    assert cluster.get_json("pc", "batch-low")["preemptionPolicy"] == "Never"
    cluster.kubectl("create", "ingress", "simple", "--rule=foo.com/bar=svc1:8080,tls=my-cert")
    rows = _table(cluster.kubectl("get", "ingress", "simple").stdout)
    assert rows[1][:4] == ["simple", "<none>", "foo.com", "80, 443"]       # ADDRESS is empty


def test_invalid_objects_are_refused_with_upstream_messages(cluster: Cluster) -> None:
    err = _invalid(cluster, {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "bad"},
                             "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": {
                                 "service": {"name": "s", "port": {"number": 80}}}}]}}]}})
    assert 'The Ingress "bad" is invalid: spec.rules[0].http.paths[0].pathType: Required value: ' \
           'pathType must be specified' in err
    err = _invalid(cluster, {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "bad"},
                             "spec": {"podSelector": {}, "ingress": [{"ports": [{"protocol": "ICMP"}]}]}})
    assert 'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"' \
        in err
    err = _invalid(cluster, {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                             "metadata": {"name": "bad"},
                             "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "minReplicas": 5,
                                      "maxReplicas": 2}})
    assert 'The HorizontalPodAutoscaler "bad" is invalid: spec.maxReplicas: Invalid value: 2: ' \
           'must be greater than or equal to `minReplicas`' in err
    err = _invalid(cluster, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "bad"},
                             "spec": {"minAvailable": "120%"}})
    assert 'The PodDisruptionBudget "bad" is invalid: spec.minAvailable: Invalid value: "120%": ' \
           'must not be greater than 100%' in err
    err = _invalid(cluster, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                             "metadata": {"name": "too-high"}, "value": 1_000_000_001})
    assert 'The PriorityClass "too-high" is invalid: value: Forbidden: maximum allowed value of a user defined ' \
           'priority is 1000000000' in err
    err = _invalid(cluster, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                             "metadata": {"name": "system-mine"}, "value": 1})
    assert "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. " \
           "error: system-mine is not a known system priority class" in err
    cluster.kubectl("create", "priorityclass", "fixed", "--value=5")
    err = cluster.kubectl("patch", "pc", "fixed", "-p", '{"value": 6}', check=False).stderr
    assert 'The PriorityClass "fixed" is invalid: value: Forbidden: may not be changed in an update.' in err
    cluster.apply_yaml({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
                        "handler": "runsc"})
    err = cluster.kubectl("patch", "runtimeclass", "gvisor", "-p", '{"handler": "runc"}', check=False).stderr
    assert 'The RuntimeClass "gvisor" is invalid: handler: Invalid value: "runc": field is immutable' in err
