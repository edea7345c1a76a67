"""Run mypy on src/kubeplane and hold its error count to the committed baseline, which may only go down.

    .venv/bin/python tools/mypy_ratchet.py            # CI: exit 1 if the count differs from the baseline
    .venv/bin/python tools/mypy_ratchet.py --update   # after fixing errors: write the lower count

The baseline (tools/mypy_baseline.txt) holds the total and, to point at what changed, the count
per file. More errors than the baseline fails and lists the files over their own count; fewer
also fails, asking for `--update`, so that the number committed is always the number there is
and an error fixed cannot silently make room for a new one. `--update` refuses to raise the total.
mypy's settings are [tool.mypy] in pyproject.toml.
"""
from __future__ import annotations

import argparse
import collections
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tools/mypy_baseline.txt"
ERROR = re.compile(r"^(?P<path>[^:\s]+\.pyi?):\d+(?::\d+)?: error: ")


def run_mypy() -> tuple[collections.Counter[str], str]:
    """Errors per file, and mypy's whole output (for the report when the count went up)."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--show-error-codes"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):            # 2: mypy itself failed (bad config, crash)
        sys.exit(f"mypy failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    counts: collections.Counter[str] = collections.Counter()
    for line in proc.stdout.splitlines():
        if m := ERROR.match(line):
            counts[m["path"]] += 1
    return counts, proc.stdout


def read_baseline() -> tuple[int, dict[str, int]]:
    total, per_file = -1, {}
    for line in BASELINE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        count, name = line.split(maxsplit=1)
        if name == "total":
            total = int(count)
        else:
            per_file[name] = int(count)
    if total < 0:
        sys.exit(f"{BASELINE}: no 'total' line")
    return total, per_file


def write_baseline(counts: collections.Counter[str]) -> None:
    lines = ["# mypy errors in src/kubeplane: the total may only go down (tools/mypy_ratchet.py --update).",
             f"{sum(counts.values())} total"]
    lines += [f"{n} {path}" for path, n in sorted(counts.items())]
    BASELINE.write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true", help="write the current (lower) counts to the baseline")
    args = ap.parse_args()
    counts, output = run_mypy()
    total = sum(counts.values())
    base_total, base_files = read_baseline()
    if args.update:
        if total > base_total:
            print(f"mypy: {total} errors, more than the baseline's {base_total}: fix them, the baseline only goes down")
            return 1
        write_baseline(counts)
        print(f"mypy: baseline {base_total} -> {total} errors; commit {BASELINE.relative_to(ROOT)}")
        return 0
    if total > base_total:
        print(f"mypy: {total} errors, the baseline allows {base_total}. Files over their own count:")
        for path, n in sorted(counts.items()):
            if n > base_files.get(path, 0):
                print(f"  {path}: {n} (baseline {base_files.get(path, 0)})")
                print("".join(f"    {line}\n" for line in output.splitlines() if line.startswith(path + ":")), end="")
        return 1
    if total < base_total:
        print(f"mypy: {total} errors, fewer than the baseline's {base_total}: well done. "
              "Lower the baseline with `python tools/mypy_ratchet.py --update` and commit it.")
        return 1
    print(f"mypy: {total} errors (baseline {base_total})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
