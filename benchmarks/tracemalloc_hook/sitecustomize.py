"""tracemalloc snapshots of `kubeplane up` for benchmarks/memory_costs.py (issue 17).

Put this directory on PYTHONPATH and set KP_TRACEMALLOC=<file>: a process started with `up`
in its arguments traces its allocations (KP_TRACEMALLOC_FRAMES frames, default 12) and, each time
the traced memory grew by 8 % over 50 MB, writes a snapshot to <file> (the last one is the peak)
and the traced size to <file>.txt. SIGUSR1 writes one more to <file>.<n> (n = 1, 2 ...) at once:
`memory_costs.py density` takes them at fixed points of its run. KP_LEAN_LAG sets
storage.watch_log.LEAN_LAG for the run (scaled with the history: memory_costs.py density).
`up --scheduler-process`'s child (`... up_children scheduler ...`) inherits the environment and
is traced too, into <file>-scheduler (and <file>-scheduler.<n> on its own SIGUSR1).
Without KP_TRACEMALLOC this does nothing.
"""
import os
import sys

_out = os.environ.get("KP_TRACEMALLOC")
if _out and "up" not in sys.argv and sys.argv[1:2] == ["scheduler"]:     # sys.argv[0] is "-m" here
    _out += "-scheduler"
if _out and ("up" in sys.argv or _out.endswith("-scheduler")):
    import threading
    import time
    import tracemalloc

    tracemalloc.start(int(os.environ.get("KP_TRACEMALLOC_FRAMES", "12")))

    def _loop(out: str) -> None:
        best = 0
        while True:
            time.sleep(3)
            cur, _ = tracemalloc.get_traced_memory()
            if cur > best * 1.08 and cur > 50 << 20:
                best = cur
                tracemalloc.take_snapshot().dump(out + ".tmp")
                os.replace(out + ".tmp", out)
                with open(out + ".txt", "w") as f:
                    f.write(f"traced {cur / 1e6:.1f} MB at {time.time():.0f}\n")

    threading.Thread(target=_loop, args=(_out,), daemon=True).start()

    import signal
    _taken = [0]

    def _on_usr1(signum: int, frame: object) -> None:
        _taken[0] += 1
        path = f"{_out}.{_taken[0]}"
        tracemalloc.take_snapshot().dump(path + ".tmp")
        os.replace(path + ".tmp", path)

    signal.signal(signal.SIGUSR1, _on_usr1)

    if os.environ.get("KP_LEAN_LAG"):
        from kubeplane.storage import watch_log
        if hasattr(watch_log, "LEAN_LAG"):
            watch_log.LEAN_LAG = int(os.environ["KP_LEAN_LAG"])
