"""Flag checks that run before `up` starts anything."""
from __future__ import annotations

import argparse
import pathlib

import pytest

from kubeplane.cmd import flags
from kubeplane.cmd.errors import Fatal
from kubeplane.kubelet.runtime.sim.lifecycle import profiles


def test_shipped_profiles_are_the_simulators() -> None:
    assert sorted(flags.shipped_profiles()) == profiles()


def test_unknown_profile_is_refused_with_the_shipped_names() -> None:
    with pytest.raises(Fatal, match='invalid argument "nope" for "--profile" flag: unknown stage profile'):
        flags.check_profile("sim", "nope")
    flags.check_profile("process", "nope")          # the process runtime has no profile


def test_a_profile_directory_is_loaded_and_a_malformed_stage_refused(tmp_path: pathlib.Path) -> None:
    flags.check_profile("sim", str(tmp_path))                       # no stages: nothing wrong
    (tmp_path / "bad.yaml").write_text("kind: Stage\nmetadata: {name: bad}\nspec: {}\n")        # no resourceRef
    with pytest.raises(Fatal, match='invalid argument ".*" for "--profile" flag'):
        flags.check_profile("sim", str(tmp_path))


def test_building_the_command_line_imports_no_server_or_metrics_library() -> None:
    """`up` reads its flags before anything serves: the standalone components' --secure-port
    flags must not pull in aiohttp, prometheus_client or their HTTPS server (~0.2 s of CPU
    before the ready line when they did)."""
    import subprocess
    import sys
    code = ("import sys; sys.argv = ['kubeplane', 'up', '--help']\n"
            "from kubeplane.cmd.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('aiohttp', 'prometheus_client', 'kubeplane.cmd.serving') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("text, want", [
    ("10.96.0.0/12", "10.96.0.0/12"), ("10.96.0.1/12", "10.96.0.0/12"),
    ("10.96.0.0/12, fd00::/108", "10.96.0.0/12,fd00::/108"),
])
def test_service_cluster_ip_range(text: str, want: str) -> None:
    assert flags.service_cluster_ip_range(text) == want


@pytest.mark.parametrize("text, message", [
    ("bogus", "invalid CIDR address: bogus"),
    ("10.0.0.0/8,10.1.0.0/16", "--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of "
                               "different IP family"),
    ("10.0.0.0/8,fd00::/108,fd01::/108", "--service-cluster-ip-range must not contain more than two entries"),
    ("fd00::/48", "specified --service-cluster-ip-range is too large; for 128-bit addresses, the mask must be >= 64"),
])
def test_service_cluster_ip_range_refused(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as e:
        flags.service_cluster_ip_range(text)
    assert str(e.value) == message


def test_service_node_port_range() -> None:
    assert flags.port_range("30000-32767") == "30000-32767"
    assert flags.port_range("30000+99") == "30000-30099"
    for bad in ("5-1", "x", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            flags.port_range(bad)


def test_the_kubelets_streaming_idle_timeout_is_upstreams_flag() -> None:
    from kubeplane.cmd import kubelet
    from kubeplane.kubelet.kubelet import KubeletOptions
    parser = argparse.ArgumentParser()
    kubelet.add_parser(parser.add_subparsers())
    base = ["kubelet", "--kubeconfig", "kc"]
    assert parser.parse_args(base).streaming_connection_idle_timeout == 4 * 3600.0
    assert KubeletOptions().streaming_connection_idle_timeout == 4 * 3600.0
    assert parser.parse_args([*base, "--streaming-connection-idle-timeout", "5m30s"]) \
        .streaming_connection_idle_timeout == 330.0
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--streaming-connection-idle-timeout", "-1s"])
