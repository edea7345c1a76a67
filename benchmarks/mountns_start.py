"""Starting a process inside its own mounts: ctypes in preexec_fn against util-linux's tools.

    sudo .venv/bin/python benchmarks/mountns_start.py [--runs 30] [--mounts 4]

Each run starts `true` with N volume directories bind-mounted at /vol/<i> (one read-only):
- none:      plain Popen, no mounts (today's container start without volumes);
- ctypes:    Popen(preexec_fn=mountns.enter) — what the shim does (unshare, a tmpfs root
             mirroring /, bind mounts, chroot), no extra exec;
- util-linux: `unshare --mount --propagation private sh -c 'mount --bind ...; exec true'`,
             the same bind mounts (onto directories made on a scratch tmpfs, which is simpler
             than what ctypes does: no mirrored root) with one exec of unshare, one of sh and
             one of mount per volume.
Prints the median and p90 wall time per start in milliseconds. Needs root (mount namespaces).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from kubeplane.kubelet.volumemanager import mountns


def timed(fn: object, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()                                          # type: ignore[operator]
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--mounts", type=int, default=4)
    args = ap.parse_args()
    if os.geteuid() != 0 or not mountns.supported():
        sys.exit("needs root and mount namespaces")
    with tempfile.TemporaryDirectory() as tmp:
        vols = []
        for i in range(args.mounts):
            v = pathlib.Path(tmp, f"v{i}")
            v.mkdir()
            (v / "f").write_text(str(i))
            vols.append(str(v))
        root = pathlib.Path(tmp, "root")
        root.mkdir()
        mounts = [{"source": v, "target": f"/vol/{i}", "readOnly": i == 0} for i, v in enumerate(vols)]
        spec = {"root": str(root), "mounts": mounts}
        scratch = pathlib.Path(tmp, "scratch")
        scratch.mkdir()
        steps = [f"mount -t tmpfs none {scratch}"]
        for i, v in enumerate(vols):
            steps.append(f"mkdir -p {scratch}/vol/{i} && mount --bind {shlex.quote(v)} {scratch}/vol/{i}")
            if i == 0:
                steps.append(f"mount -o remount,bind,ro {scratch}/vol/{i}")
        script = " && ".join(steps) + " && exec true"
        ways = {
            "none": lambda: subprocess.run(["true"], check=True),
            "ctypes": lambda: subprocess.run(["true"], check=True, preexec_fn=lambda: mountns.enter(spec)),
            "util-linux": lambda: subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                                                 check=True),
        }
        for name, fn in ways.items():
            ms = timed(fn, args.runs)
            p90 = sorted(ms)[int(len(ms) * 0.9) - 1]
            print(f"{name:11s} median {statistics.median(ms):6.2f} ms  p90 {p90:6.2f} ms  ({args.mounts} mounts)")


if __name__ == "__main__":
    main()
