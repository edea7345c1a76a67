"""Golden tests of the shipped stage profiles: testdata/<case>.input.yaml holds a profile name
and a sim object; running its stages to the end must give testdata/<case>.output.yaml.

Times are placeholders: `Now` renders `<Now+Ns>`, N being the seconds of (earliest) delay
waited so far; PodIP/NodeIP are fixed. Regenerate with KUBEPLANE_UPDATE_GOLDEN=1 and review
the diff.
"""
from __future__ import annotations

import os
import pathlib

import pytest
import yaml

from kubeplane.kubelet.runtime.sim import image_ref
from kubeplane.kubelet.runtime.sim.lifecycle import Lifecycle, load_profile, profiles, run_stages
from kubeplane.kubelet.runtime.sim.renderer import Renderer

TESTDATA = pathlib.Path(__file__).parent / "testdata"
CASES = sorted(p.name[: -len(".input.yaml")] for p in TESTDATA.glob("*.input.yaml"))


def run_case(case: str) -> list:
    spec = yaml.safe_load((TESTDATA / f"{case}.input.yaml").read_text())
    elapsed = [0.0]

    def now_placeholder() -> str:
        return "<Now>" if not elapsed[0] else f"<Now+{elapsed[0]:g}s>"

    helpers = {"Now": now_placeholder, "PodIP": lambda: "10.244.0.2", "NodeIP": lambda: "172.18.0.2",
               "NodeName": lambda: "kubeplane-node-0", "ImageID": lambda image: image_ref(image or "")}
    return run_stages(Lifecycle(load_profile(spec["profile"])), spec["object"], Renderer(helpers),
                      now=lambda: 1_600_000_000.0 + elapsed[0],
                      advance=lambda s: elapsed.__setitem__(0, elapsed[0] + s), helpers=helpers)


@pytest.mark.parametrize("case", CASES)
def test_stage_golden(case: str) -> None:
    got = run_case(case)
    out = TESTDATA / f"{case}.output.yaml"
    if os.environ.get("KUBEPLANE_UPDATE_GOLDEN"):
        out.write_text(yaml.safe_dump(got, sort_keys=False, width=120))
    assert got == yaml.safe_load(out.read_text())


def test_every_profile_has_golden_cases() -> None:
    covered = {yaml.safe_load((TESTDATA / f"{c}.input.yaml").read_text())["profile"] for c in CASES}
    assert set(profiles()) <= covered


def test_every_stage_is_exercised_by_some_case() -> None:
    used = {step["stage"] for c in CASES for step in run_case(c) if "stage" in step}
    shipped = {s.name for p in profiles() for s in load_profile(p)}
    assert shipped <= used, shipped - used
