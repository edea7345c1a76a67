"""The kubelet's managed /etc/hosts (kubelet/network/hosts.py), byte for byte as upstream's
managedHostsFileContent / nodeHostsFileContent write it."""
from __future__ import annotations

import pathlib
from typing import Any

from kubeplane.api.types import core_v1, from_dict
from kubeplane.kubelet.network.hosts import ensure_hosts_file, pod_hostname_and_domain

LOCALHOST = ("# Kubernetes-managed hosts file.\n"
             "127.0.0.1\tlocalhost\n"
             "::1\tlocalhost ip6-localhost ip6-loopback\n"
             "fe00::0\tip6-localnet\n"
             "fe00::0\tip6-mcastprefix\n"
             "fe00::1\tip6-allnodes\n"
             "fe00::2\tip6-allrouters\n")


def pod(name: str = "web-0", **spec: Any) -> core_v1.Pod:
    return from_dict({"metadata": {"name": name, "namespace": "team"}, "spec": {"containers": [], **spec}},
                     core_v1.Pod)


def test_a_pods_own_hosts_file_with_its_ip_hostname_fqdn_and_aliases(tmp_path: pathlib.Path) -> None:
    p = pod(hostname="db", subdomain="dbs", hostAliases=[{"ip": "10.1.2.3", "hostnames": ["foo.local", "bar.local"]},
                                                        {"ip": "10.1.2.4", "hostnames": ["baz"]}])
    path = ensure_hosts_file(tmp_path, p, ["10.244.0.5"], "cluster.local")
    assert path == tmp_path / "etc-hosts" and (path.stat().st_mode & 0o777) == 0o644
    assert path.read_text() == (LOCALHOST + "10.244.0.5\tdb.dbs.team.svc.cluster.local\tdb\n"
                                "\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n10.1.2.4\tbaz\n")
    plain = ensure_hosts_file(tmp_path, pod(), ["10.244.0.6"], "cluster.local")
    assert plain is not None and plain.read_text() == LOCALHOST + "10.244.0.6\tweb-0\n"
    assert ensure_hosts_file(tmp_path, pod(), [], "cluster.local") is None         # no IP yet: not mounted


def test_host_network_pods_get_the_nodes_file_with_their_aliases_only_when_they_have_some(
        tmp_path: pathlib.Path) -> None:
    node = tmp_path / "node-hosts"
    node.write_text("127.0.0.1\tlocalhost\n192.0.2.2\tmachine\n")
    p = pod(hostNetwork=True, hostAliases=[{"ip": "10.1.2.3", "hostnames": ["foo.local"]}])
    path = ensure_hosts_file(tmp_path / "pod", p, ["192.0.2.2"], "cluster.local", host_network=True,
                             node_hosts=str(node))
    assert path is not None and path.read_text() == (
        "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n192.0.2.2\tmachine\n"
        "\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\n")
    assert ensure_hosts_file(tmp_path, pod(hostNetwork=True), ["192.0.2.2"], "cluster.local", host_network=True,
                             node_hosts=str(node)) is None        # the host's own /etc/hosts says the same


def test_hostname_is_cut_at_63_characters_without_a_trailing_dash_or_dot() -> None:
    long = "a" * 62 + "-b"
    assert pod_hostname_and_domain(pod(long), "cluster.local") == ("a" * 62, "")
    assert pod_hostname_and_domain(pod(subdomain="s"), "example.org") == ("web-0", "s.team.svc.example.org")


def test_the_containers_hostname_variable_is_the_pods_hostname() -> None:
    from kubeplane.kubelet.runtime.process.env import host_env
    assert host_env(pod(hostname="db"))["HOSTNAME"] == "db"
    assert host_env(pod())["HOSTNAME"] == "web-0"
