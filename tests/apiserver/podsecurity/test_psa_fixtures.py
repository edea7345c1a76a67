"""Upstream's generated fixtures (test/testdata/<level>/<version>/{pass,fail}/*.yaml of
k8s.io/pod-security-admission, ~4,500 pods over every policy version): each pass pod is allowed
and each fail pod refused at its level and version, after the API's defaulting (as admission
sees a pod). Read from a local mirror of the repository when there is one; skipped otherwise."""
from __future__ import annotations

import os
import pathlib
import subprocess

import pytest
import yaml

from kubeplane.apiserver.registry.scheme import set_defaults
from kubeplane.apiserver.admission.podsecurity.api import LevelVersion, parse_version
from kubeplane.apiserver.admission.podsecurity.registry import DEFAULT_EVALUATOR

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MIRROR = pathlib.Path(os.environ.get("PSA_MIRROR", "/work/.mirror/kubernetes+pod-security-admission/repo"))


def fixtures() -> dict[str, bytes]:
    """path -> content of every fixture, read in one `git cat-file --batch`."""
    names = subprocess.run(["git", "-C", str(MIRROR), "ls-tree", "-r", "--name-only", "HEAD", "test/testdata"],
                           capture_output=True, text=True, check=True).stdout.split()
    names = [n for n in names if n.endswith(".yaml")]
    out = subprocess.run(["git", "-C", str(MIRROR), "cat-file", "--batch"], capture_output=True, check=True,
                         input="".join(f"HEAD:{n}\n" for n in names).encode()).stdout
    contents, pos = {}, 0
    for n in names:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        contents[n] = out[header_end + 1:header_end + 1 + size]
        pos = header_end + 2 + size
    return contents


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no local mirror of kubernetes/pod-security-admission")
def test_upstream_fixtures() -> None:
    wrong = []
    files = fixtures()
    assert len(files) > 4000
    for path, content in files.items():
        _, _, level, version, verdict, _ = path.split("/")
        pod = yaml.load(content, Loader=LOADER)
        set_defaults(pod)
        result = DEFAULT_EVALUATOR.evaluate_pod(LevelVersion(level, parse_version(version)),
                                                pod.get("metadata") or {}, pod.get("spec") or {})
        if result.allowed != (verdict == "pass"):
            wrong.append(f"{path}: {result.forbidden_detail() or 'allowed'}")
    assert wrong == []
