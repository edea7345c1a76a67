"""`kubeplane up --runtime process --pod-network netns`, driven by real kubectl: each pod has a
network namespace and an address from its node's podCIDR, so two replicas of
`python -m http.server 8080` both run; the host and a third pod reach each at its own IP;
deleting pods and stopping (kill -9 included) leave no namespace, veth or bridge behind.
Skipped, with the reason, where this process cannot create network namespaces.
"""
from __future__ import annotations

import ipaddress
import json
import os
import pathlib
import signal
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import dns.message
import pytest

from kubeplane.kubelet.network import netns_name, unavailable_reason
from kubeplane.kubelet.network.pod_network import bridge_name, veth_name
from kubeplane.kubelet.runtime.process.records import kill_recorded

from .cluster import Cluster, eventually
from .test_process_runtime import PY, deployment, is_ready, pods

PORT = 8080
NODE = "kubeplane-node-0"
# Writes the pod's name where http.server serves it, then serves on 8080 (every replica).
SERVE = ["/bin/sh", "-c", f'echo "$HOSTNAME" > whoami.txt && exec {PY} -m http.server {PORT}']
FETCH = ("import sys, time, urllib.request\n"
         "for ip in sys.argv[1:]:\n"
         "    print(ip, urllib.request.urlopen(f'http://{ip}:%d/whoami.txt', timeout=5).read().decode().strip())\n"
         "sys.stdout.flush(); time.sleep(3600)\n" % PORT)


@pytest.fixture
def ncluster() -> Iterator[Cluster]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"network namespaces are unavailable: {reason}")
    c = Cluster(nodes=1, extra_args=("--runtime", "process", "--pod-network", "netns")).start()
    try:
        yield c
    finally:
        c.cleanup()                           # kill_recorded: containers, namespaces, veths, bridge


def netns_list() -> set[str]:
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())


def link_exists(name: str) -> bool:
    return os.path.exists(f"/sys/class/net/{name}")


def whoami(ip: str) -> str:
    try:
        with urllib.request.urlopen(f"http://{ip}:{PORT}/whoami.txt", timeout=5) as resp:
            return str(resp.read().decode().strip())
    except OSError:
        return ""


def web(c: Cluster) -> list[dict[str, Any]]:
    c.apply_yaml(deployment("web", {"name": "web", "image": "python:3", "command": SERVE,
                                    "readinessProbe": {"httpGet": {"path": "/", "port": PORT}, "periodSeconds": 1}},
                            replicas=2))
    return eventually(lambda: (ps := pods(c, "web")) and len(ps) == 2 and all(map(is_ready, ps)) and ps,
                      "two Ready web pods", timeout=60)


def test_two_replicas_on_one_port_each_at_its_own_pod_ip(ncluster: Cluster) -> None:
    c = ncluster
    ps = web(c)
    cidr = ipaddress.ip_network(c.get_json("node", NODE)["spec"]["podCIDR"])
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in ps}
    assert len(set(ips.values())) == 2
    for name, ip in ips.items():
        assert ipaddress.ip_address(ip) in cidr and ip != str(next(cidr.hosts()))
        p = next(p for p in ps if p["metadata"]["name"] == name)
        assert p["status"]["podIPs"] == [{"ip": ip}] and p["status"]["hostIP"] == "127.0.0.1"
        assert p["status"]["containerStatuses"][0]["restartCount"] == 0       # no "Address already in use"
        assert eventually(lambda ip=ip: whoami(ip), f"{name} at {ip}") == name   # from the host
    # A third pod reaches both replicas at their IPs.
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client", "namespace": "default"},
                  "spec": {"terminationGracePeriodSeconds": 1, "containers": [
                      {"name": "c", "image": "python:3", "command": [PY, "-c", FETCH, *ips.values()]}]}})
    logs = eventually(lambda: (out := c.kubectl("logs", "client", check=False).stdout).count("\n") >= 2 and out,
                      "the client's two answers", timeout=60)
    assert sorted(logs.split("\n")[:2]) == sorted(f"{ip} {name}" for name, ip in ips.items())
    # Deleting the pods removes their namespaces and veths.
    uids = [p["metadata"]["uid"] for p in ps]
    assert {netns_name(u) for u in uids} <= netns_list()
    c.kubectl("delete", "deployment", "web")
    eventually(lambda: not {netns_name(u) for u in uids} & netns_list()
               and not any(link_exists(veth_name(u)) for u in uids), "the pods' namespaces and veths to go")


def test_kill_9_keeps_running_pods_reachable_and_stop_leaves_nothing(ncluster: Cluster) -> None:
    c = ncluster
    ps = web(c)
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in ps}
    uids = {p["metadata"]["uid"] for p in ps}
    c.stop(signal.SIGKILL)
    for name, ip in ips.items():                           # serving while `up` is down
        assert whoami(ip) == name
    c.start()
    for name, ip in ips.items():
        assert eventually(lambda ip=ip: whoami(ip), f"{name} after the restart") == name
    assert {p["status"]["podIP"] for p in pods(c, "web")} == set(ips.values())
    c.kubectl("scale", "deployment", "web", "--replicas", "1")
    eventually(lambda: len(uids - {p["metadata"]["uid"] for p in pods(c, "web")}) == 1, "one pod gone")
    gone = (uids - {p["metadata"]["uid"] for p in pods(c, "web")}).pop()
    eventually(lambda: netns_name(gone) not in netns_list(), "the scaled-down pod's namespace to go")
    bridge = bridge_name((c.data_dir / "kubelet").resolve(), NODE)
    assert link_exists(bridge)
    c.stop(signal.SIGTERM)
    kill_recorded(c.data_dir / "kubelet")                  # what `kubeplane reset` and Cluster.cleanup do
    assert not {netns_name(u) for u in uids} & netns_list()
    assert not link_exists(bridge) and not any(link_exists(veth_name(u)) for u in uids)


def test_a_cluster_ip_service_reaches_ready_replicas_from_pods_and_the_host(ncluster: Cluster) -> None:
    c = ncluster
    c.apply_yaml(deployment("svc", {"name": "web", "image": "python:3", "command": [
        "/bin/sh", "-c", f'echo "$HOSTNAME" > whoami.txt && touch ready && exec {PY} -m http.server {PORT}'],
        "readinessProbe": {"exec": {"command": ["test", "-f", "ready"]}, "periodSeconds": 1}}, replicas=2))
    c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "default"},
                  "spec": {"type": "NodePort", "selector": {"app": "svc"},
                           "ports": [{"port": 80, "targetPort": PORT}]}})
    ps = eventually(lambda: (ps := pods(c, "svc")) and len(ps) == 2 and all(map(is_ready, ps)) and ps,
                    "two Ready replicas", timeout=60)
    names = {p["metadata"]["name"] for p in ps}
    svc = c.get_json("service", "svc")
    cluster_ip, node_port = svc["spec"]["clusterIP"], svc["spec"]["ports"][0]["nodePort"]
    # A third pod asks the ClusterIP until it has heard from both replicas.
    client = ("import sys, time, urllib.request\n"
              "seen = set()\n"
              "while len(seen) < 2:\n"
              "    try:\n"
              "        seen.add(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode().strip())\n"
              "    except OSError:\n"
              "        time.sleep(0.2)\n"
              "print(' '.join(sorted(seen)), flush=True)\n"
              "time.sleep(3600)\n")
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "svc-client", "namespace": "default"},
                  "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "c", "image": "python:3",
                           "command": [PY, "-c", client, f"http://{cluster_ip}/whoami.txt"]}]}})
    out = eventually(lambda: (o := c.kubectl("logs", "svc-client", check=False).stdout.strip()) and o,
                     "the client pod to reach both replicas through the ClusterIP", timeout=60)
    assert set(out.split()) == names
    # The NodePort on every address of the node (--nodeport-addresses unset): loopback, the host's
    # other addresses, and the pods' gateway on the node's bridge.
    gateway = str(next(ipaddress.ip_network(c.get_json("node", NODE)["spec"]["podCIDR"]).hosts()))
    for addr in ("127.0.0.1", *host_addresses(), gateway):
        assert eventually(lambda addr=addr: {get_text(f"http://{addr}:{node_port}/whoami.txt")
                                             for _ in range(6)} == names, f"both replicas through {addr}:{node_port}")
    # A replica that turns unready leaves the Service.
    unready = ps[0]
    (c.data_dir / "kubelet" / "pods" / unready["metadata"]["uid"] / "work" / "ready").unlink()
    eventually(lambda: not is_ready(c.get_json("pod", unready["metadata"]["name"])), "the replica to turn unready")
    other = (names - {unready["metadata"]["name"]}).pop()
    assert eventually(lambda: {get_text(f"http://{cluster_ip}/whoami.txt") for _ in range(6)} == {other},
                      "only the ready replica behind the ClusterIP")
    # No ready endpoint at all: the ClusterIP and the NodePort refuse connections (upstream's REJECT).
    other_uid = next(p["metadata"]["uid"] for p in ps if p["metadata"]["name"] == other)
    (c.data_dir / "kubelet" / "pods" / other_uid / "work" / "ready").unlink()
    eventually(lambda: refused(cluster_ip, 80) and refused("127.0.0.1", node_port), "connections to be refused")


def refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=3).close()
        return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def host_addresses() -> list[str]:
    """The host's IPv4 addresses other than loopback and kubeplane's own interfaces."""
    out = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True).stdout
    return [a["local"] for link in json.loads(out or "[]") if not link["ifname"].startswith(("lo", "kp"))
            for a in link.get("addr_info", ())]



DNS_CLIENT = ("import os, socket, struct, sys, time\n"
              "print(os.environ.get('NAMED_SERVICE_HOST'), os.environ.get('KUBERNETES_SERVICE_HOST'), flush=True)\n"
              "q = struct.pack('!HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0)\n"
              "q += b''.join(bytes([len(x)]) + x.encode() for x in sys.argv[1].split('.')) + b'\\0'\n"
              "q += struct.pack('!HH', 1, 1)\n"
              "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
              "s.settimeout(2)\n"
              "for _ in range(60):\n"
              "    try:\n"
              "        s.sendto(q, ('10.96.0.10', 53))\n"
              "        print(s.recv(512).hex(), flush=True)\n"
              "        break\n"
              "    except OSError:\n"
              "        time.sleep(0.5)\n"
              "time.sleep(3600)\n")


def test_cluster_dns_answers_a_pod_with_the_service_cluster_ip(ncluster: Cluster) -> None:
    c = ncluster
    c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "named", "namespace": "default"},
                  "spec": {"selector": {"app": "none"}, "ports": [{"port": 80}]}})
    cluster_ip = c.get_json("service", "named")["spec"]["clusterIP"]
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dns-client", "namespace": "default"},
                  "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "c", "image": "python:3",
                           "command": [PY, "-c", DNS_CLIENT, "named.default.svc.cluster.local"]}]}})
    out = eventually(lambda: (o := c.kubectl("logs", "dns-client", check=False).stdout.strip()).count("\n") and o,
                     "the pod's DNS answer", timeout=60)
    links, answer = out.split("\n")[:2]
    assert links.split() == [cluster_ip, "10.96.0.1"]      # service links in its environment
    reply = dns.message.from_wire(bytes.fromhex(answer))
    assert [rd.to_text() for rrset in reply.answer for rd in rrset] == [cluster_ip]
    # The kubernetes Service's ClusterIP leads to the API server (its endpoint: 127.0.0.1:<port>).
    ctx = ssl.create_default_context(cafile=str(c.data_dir / "pki" / "ca.crt"))
    ctx.check_hostname = False
    try:
        urllib.request.urlopen("https://10.96.0.1/readyz", context=ctx, timeout=5)
        status = 200
    except urllib.error.HTTPError as err:
        status = err.code                                  # 401/403: an answer of the API server all the same
    assert status in (200, 401, 403)
    uid = c.get_json("pod", "dns-client")["metadata"]["uid"]
    resolv = (c.data_dir / "kubelet" / "pods" / uid / "resolv.conf").read_text().splitlines()
    assert "nameserver 10.96.0.10" in resolv
    assert any(line.startswith("search default.svc.cluster.local svc.cluster.local cluster.local") for line in resolv)


def get_text(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return str(resp.read().decode().strip())
    except OSError:
        return ""


IN_CLUSTER = ("import json, os, socket, ssl, subprocess, time, urllib.request\n"
              "for _ in range(150):\n"                      # the Service appears in the DNS once its informer has it
              "    try:\n"
              "        ip = socket.gethostbyname('web')\n"
              "        break\n"
              "    except OSError:\n"
              "        time.sleep(0.2)\n"
              "print('web', ip, socket.gethostbyname('web.default.svc.cluster.local'), flush=True)\n"
              "print('getent', *subprocess.run(['getent', 'hosts', 'kubernetes.default'], capture_output=True,\n"
              "                                text=True).stdout.split()[:1], flush=True)\n"
              "print('fetch', urllib.request.urlopen('http://web/whoami.txt', timeout=5).read().decode().strip(),\n"
              "      flush=True)\n"
              "d = '/var/run/secrets/kubernetes.io/serviceaccount'\n"
              "ctx = ssl.create_default_context(cafile=d + '/ca.crt')\n"
              "body = json.dumps({'apiVersion': 'authentication.k8s.io/v1', 'kind': 'SelfSubjectReview'}).encode()\n"
              "req = urllib.request.Request('https://kubernetes.default/apis/authentication.k8s.io/v1/selfsubjectreviews',\n"
              "    data=body, headers={'Authorization': 'Bearer ' + open(d + '/token').read(),\n"
              "                        'Content-Type': 'application/json'})\n"
              "print('user', json.load(urllib.request.urlopen(req, context=ctx, timeout=10))['status']['userInfo']['username'],\n"
              "      flush=True)\n"
              "time.sleep(3600)\n")


def test_a_pod_resolves_service_names_through_its_resolv_conf_and_calls_them(ncluster: Cluster) -> None:
    """A pod's /etc/resolv.conf is its own (the cluster DNS, search default.svc.cluster.local ...):
    the C library's resolver in the pod finds a Service by its short name and the API server as
    kubernetes.default, and the pod fetches from both (through the kube-proxy), the API server
    with its ServiceAccount token."""
    c = ncluster
    assert "10.96.0.10" not in pathlib.Path("/etc/resolv.conf").read_text()     # the pod's file, not the host's
    names = {p["metadata"]["name"] for p in web(c)}
    c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                  "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": PORT}]}})
    cluster_ip = c.get_json("service", "web")["spec"]["clusterIP"]
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "in-cluster", "namespace": "default"},
                  "spec": {"terminationGracePeriodSeconds": 1, "containers": [
                      {"name": "c", "image": "python:3", "command": [PY, "-c", IN_CLUSTER]}]}})
    out = eventually(lambda: (o := c.kubectl("logs", "in-cluster", check=False).stdout).count("\n") >= 4 and o,
                     "the pod's four lines", timeout=90)
    lines = dict(line.split(" ", 1) for line in out.splitlines()[:4])
    assert lines["web"] == f"{cluster_ip} {cluster_ip}"
    assert lines["getent"] == "10.96.0.1"
    assert lines["fetch"] in names
    assert lines["user"] == "system:serviceaccount:default:default"
    uid = c.get_json("pod", "in-cluster")["metadata"]["uid"]
    assert netns_name(uid) in netns_list()                   # it is in a network namespace of its own


HOSTS_CLIENT = ("import subprocess, time\n"
                "print(open('/etc/hosts').read(), end='', flush=True)\n"
                "print('getent', *subprocess.run(['getent', 'hosts', 'foo.local'], capture_output=True,\n"
                "                                text=True).stdout.split(), flush=True)\n"
                "time.sleep(3600)\n")


def test_the_kubelet_manages_the_pods_etc_hosts(ncluster: Cluster) -> None:
    """The pod's /etc/hosts is the kubelet's: its IP with its hostname and FQDN (hostname,
    subdomain), then its hostAliases, which the C library's resolver finds."""
    c = ncluster
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hosts", "namespace": "default"},
                  "spec": {"hostname": "db", "subdomain": "dbs", "terminationGracePeriodSeconds": 1,
                           "hostAliases": [{"ip": "10.1.2.3", "hostnames": ["foo.local", "bar.local"]}],
                           "containers": [{"name": "c", "image": "python:3", "command": [PY, "-c", HOSTS_CLIENT]}]}})
    out = eventually(lambda: (o := c.kubectl("logs", "hosts", check=False).stdout) and "getent" in o and o,
                     "the pod's /etc/hosts", timeout=60)
    ip = c.get_json("pod", "hosts")["status"]["podIP"]
    lines = out.splitlines()
    assert lines[0] == "# Kubernetes-managed hosts file."
    assert f"{ip}\tdb.dbs.default.svc.cluster.local\tdb" in lines
    assert lines[-3:] == ["# Entries added by HostAliases.", "10.1.2.3\tfoo.local\tbar.local",
                          "getent 10.1.2.3 foo.local bar.local"]
    assert "/etc/hosts" not in pathlib.Path("/etc/hosts").read_text() and "foo.local" not in pathlib.Path(
        "/etc/hosts").read_text()                                  # the host's own file is untouched


def test_a_load_balancer_service_with_local_traffic_policy(ncluster: Cluster) -> None:
    """A LoadBalancer Service with externalTrafficPolicy Local: its healthCheckNodePort answers
    upstream's JSON with the local endpoint count (200, then 503 once none is ready), and the
    load balancer's ingress IP (set in its status, as a load balancer controller would) is
    captured on the node like a ClusterIP."""
    c = ncluster
    names = {p["metadata"]["name"] for p in web(c)}
    c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb", "namespace": "default"},
                  "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "selector": {"app": "web"},
                           "ports": [{"port": 80, "targetPort": PORT}]}})
    svc = c.get_json("service", "lb")
    hc_port = svc["spec"]["healthCheckNodePort"]

    def health() -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{hc_port}/", timeout=3) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())
        except OSError:
            return 0, {}
    status, body = eventually(lambda: (h := health())[0] == 200 and h, "the health check node port to answer 200")
    assert body == {"service": {"namespace": "default", "name": "lb"}, "localEndpoints": 2,
                    "serviceProxyHealthy": True}
    c.kubectl("patch", "service", "lb", "--subresource", "status", "--type", "merge", "-p",
              json.dumps({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10", "ipMode": "VIP"}]}}}))
    assert eventually(lambda: {get_text("http://203.0.113.10/whoami.txt") for _ in range(6)} == names,
                      "both replicas through the load balancer IP")
    c.kubectl("scale", "deployment", "web", "--replicas", "0")
    assert eventually(lambda: (h := health())[0] == 503 and h, "the health check to say 503")[1]["localEndpoints"] == 0


POLICY_CLIENT = ("import sys, time, urllib.request\n"
                 "for url in sys.argv[1:]:\n"
                 "    try:\n"
                 "        print(url, urllib.request.urlopen(url, timeout=5).read().decode().strip(), flush=True)\n"
                 "    except OSError as err:\n"
                 "        print(url, 'failed', type(err).__name__, flush=True)\n"
                 "time.sleep(3600)\n")


def test_traffic_policies_local_between_two_nodes() -> None:
    """Two nodes, the only endpoint on node-1. internalTrafficPolicy Local: a pod of node-1
    reaches the ClusterIP, a pod of node-0 is cut off (upstream DROPs it; here a reset).
    externalTrafficPolicy Local: pods short-circuit to every endpoint, so node-0's pod reaches
    the NodePort at its gateway (the node's address) all the same."""
    if reason := unavailable_reason():
        pytest.skip(f"network namespaces are unavailable: {reason}")
    c = Cluster(nodes=2, extra_args=("--runtime", "process", "--pod-network", "netns")).start()
    try:
        c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "srv", "namespace": "default",
                                                                     "labels": {"app": "srv"}},
                      "spec": {"nodeName": "kubeplane-node-1", "terminationGracePeriodSeconds": 1, "containers": [
                          {"name": "c", "image": "python:3", "command": SERVE,
                           "readinessProbe": {"httpGet": {"path": "/", "port": PORT}, "periodSeconds": 1}}]}})
        for name, policy in (("itp", {"internalTrafficPolicy": "Local"}),
                             ("etp", {"type": "NodePort", "externalTrafficPolicy": "Local"})):
            c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
                          "spec": {"selector": {"app": "srv"}, "ports": [{"port": 80, "targetPort": PORT}], **policy}})
        eventually(lambda: is_ready(c.get_json("pod", "srv")), "the server Ready", timeout=60)
        itp = f"http://{c.get_json('service', 'itp')['spec']['clusterIP']}/whoami.txt"
        gateway0 = str(next(ipaddress.ip_network(c.get_json("node", NODE)["spec"]["podCIDR"]).hosts()))
        etp = f"http://{gateway0}:{c.get_json('service', 'etp')['spec']['ports'][0]['nodePort']}/whoami.txt"
        assert eventually(lambda: get_text(itp) == "srv", "the ClusterIP from the host")   # the host: every node's
        for node in ("kubeplane-node-0", "kubeplane-node-1"):
            c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"client-{node[-1]}",
                                                                         "namespace": "default"},
                          "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [
                              {"name": "c", "image": "python:3", "command": [PY, "-c", POLICY_CLIENT, itp, etp]}]}})
        logs = {n: eventually(lambda n=n: (o := c.kubectl("logs", f"client-{n}", check=False).stdout).count("\n") >= 2
                              and o.splitlines()[:2], f"client-{n}'s two lines", timeout=60) for n in "01"}
        assert logs["1"] == [f"{itp} srv", f"{etp} srv"]
        assert logs["0"][0].startswith(f"{itp} failed") and logs["0"][1] == f"{etp} srv"
    finally:
        c.cleanup()
