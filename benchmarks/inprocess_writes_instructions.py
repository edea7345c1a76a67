"""Instructions per write (callgrind) of benchmarks/inprocess_writes.py's phases with
--authorization-mode Node,RBAC: a ReplicaSet's pod create, the scheduler's binding, the kubelet's
two status patches (as its node), the kubelet's Event create. Load-independent, where
inprocess_writes.py's CPU times are not on a busy machine.

    python benchmarks/inprocess_writes_instructions.py [-n 500] [--src CHECKOUT]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
PHASES = (("create", 1), ("bind", 1), ("status", 2), ("event", 1))      # (phase, writes per pod)


def _dump() -> None:
    """One callgrind dump per phase (the counts since the last one)."""
    subprocess.run(["callgrind_control", "-d", str(os.getpid())], stdout=subprocess.DEVNULL, check=False)


def _child(n: int) -> None:
    sys.path.insert(0, str(HERE))
    import inprocess_writes as ipw
    from instructions import _switch

    async def timed(n_ops: int, body, profile: bool) -> float:      # type: ignore[no-untyped-def]
        ipw.gc.collect()
        _switch(os.getpid(), True)
        await body()
        _switch(os.getpid(), False)
        _dump()
        return 0.0
    ipw.timed = timed
    ipw.gc_tuning.tune()
    asyncio.run(ipw.one_run(n, "", ("Node", "RBAC")))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=500)
    ap.add_argument("--src", default=str(HERE.parent))
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        _child(a.n)
        return
    with tempfile.TemporaryDirectory(prefix="ipw-instr-") as tmp:
        out = pathlib.Path(tmp) / "cg.out"
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                        sys.executable, __file__, "--child", "-n", str(a.n)],
                       env=dict(os.environ, PYTHONPATH=f"{a.src}/src"), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dumps = sorted(pathlib.Path(tmp).glob("cg.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
        totals = [sum(int(line.split()[1]) for line in f.read_text(errors="replace").splitlines()
                      if line.startswith("totals:")) for f in dumps]
    print(f"{a.src}: instructions per write: " + "  ".join(
        f"{name} {t / (a.n * k):,.0f}" for (name, k), t in zip(PHASES, totals)))


if __name__ == "__main__":
    main()
