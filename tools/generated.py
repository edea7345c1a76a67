"""What every generator in tools/ shares: write its files, or (--check) fail if the committed
ones differ, naming the command that brings them up to date (tests call main(["--check"]))."""
from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Callable


def main(argv: list[str] | None, doc: str, out: pathlib.Path, render_all: Callable[[], dict[str, str]],
         tool: str) -> int:
    """Write render_all()'s {file name: text} into out, or with --check report the stale ones."""
    ap = argparse.ArgumentParser(description=doc.split("\n", 1)[0])
    ap.add_argument("--check", action="store_true", help="fail if the committed output differs")
    args = ap.parse_args(argv)
    stale = []
    for name, src in render_all().items():
        path = out / name
        if args.check:
            if not path.exists() or path.read_text() != src:
                stale.append(name)
        else:
            path.write_text(src)
    if stale:
        print(f"stale generated files (run {tool}):", ", ".join(stale), file=sys.stderr)
        return 1
    return 0
