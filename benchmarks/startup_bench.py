"""`kubeplane up` start-up: seconds from process start to the ready line, wall and CPU.

Run:  .venv/bin/python benchmarks/startup_bench.py [--runs 9] [--compare OTHER_SRC] [-- UP_ARGS...]

Each run starts `kubeplane up --data-dir <fresh tmp> --port 0` (first start: PKI and
encryption key made), waits for the ready line and stops it with SIGINT. Wall time is from
spawning the process to reading the line; CPU time is the process's own (all threads) when it
prints the line, taken inside it by a sitecustomize module put on PYTHONPATH for the run, so
the components starting after the line are not counted. On a shared machine the CPU figure is
the steadier one. --compare SRC alternates runs with PYTHONPATH=SRC (another checkout's src/)
and prints both.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

SITECUSTOMIZE = '''
import builtins, os, sys, time
if "up" in sys.argv:
    _print = builtins.print
    def _ready(*args, **kwargs):
        if args and isinstance(args[0], str) and "is ready" in args[0]:
            with open(os.environ["STARTUP_BENCH_CPU"], "w") as f:
                f.write(repr(time.process_time()))
        return _print(*args, **kwargs)
    builtins.print = _ready
'''


def one_run(src: str | None, hook_dir: pathlib.Path, up_args: list[str]) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        cpu_file = pathlib.Path(tmp) / "cpu"
        path = [str(hook_dir)] + ([src] if src else []) + [os.environ.get("PYTHONPATH", "")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p), "STARTUP_BENCH_CPU": str(cpu_file)}
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "kubeplane", "up", "--data-dir", f"{tmp}/d", "--port", "0",
                                 *up_args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        assert proc.stdout is not None
        while b"is ready" not in (line := proc.stdout.readline()):
            if not line:
                raise RuntimeError("kubeplane up exited before its ready line")
        wall = time.perf_counter() - t0
        proc.send_signal(2)
        proc.wait(30)
        return wall, float(cpu_file.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--compare", metavar="SRC", help="another checkout's src/ directory, run alternately")
    ap.add_argument("up_args", nargs="*", help="more `kubeplane up` flags (after --)")
    args = ap.parse_args()
    trees: dict[str, str | None] = {"this": None}
    if args.compare:
        trees["compare"] = args.compare
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as hooks:
        hook_dir = pathlib.Path(hooks)
        (hook_dir / "sitecustomize.py").write_text(SITECUSTOMIZE)
        for _ in range(args.runs):
            for name, src in trees.items():
                results[name].append(one_run(src, hook_dir, args.up_args))
    for name, runs in results.items():
        walls, cpus = [r[0] for r in runs], [r[1] for r in runs]
        label = name if name == "this" else f"{name} ({trees[name]})"
        print(f"{label}: ready after {statistics.median(walls):.3f} s wall ({min(walls):.3f}-{max(walls):.3f}), "
              f"{statistics.median(cpus):.3f} s CPU ({min(cpus):.3f}-{max(cpus):.3f}), median of {len(runs)}")


if __name__ == "__main__":
    main()
