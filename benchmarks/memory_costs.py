"""What one object costs in memory, structure by structure (issue 17: peak RSS of density.py).

Run:  python benchmarks/memory_costs.py objects
      python benchmarks/memory_costs.py snapshot FILE [--top 40]

`objects` starts a small `kubeplane up` (2 nodes, memory storage), runs a 4-replica Deployment
to Ready, reads back one object of each kind the density run stores by the thousand (a Ready
pod, its node, an Event, the ReplicaSet, a Lease) and prints, per object, what each copy the
process keeps of it costs:
  - `dumps`: the heap orjson.dumps' result holds (its whole output buffer: 4 KiB at least);
  - `bytes`: the heap the encoded JSON a stored version holds takes (KeyValue.value, one per
    history event; memory.encode copies it to its size);
  - `dict`: the decoded dict a stored version holds (KeyValue.obj, orjson.loads);
  - `struct`: the typed object an informer keeps (msgspec Struct, types.decode);
  - `event`: a history entry around them (WatchEvent + KeyValue, the slots only);
  - for the pod, a scheduler PodInfo inside a NodeInfo (beyond the informer's Struct).
A deep size counts every dict, list, str, int... reachable from the object once, leaving out what
two independent decodes of the same bytes share (orjson's and msgspec's cached keys, small
ints, interned names): what one more object really adds.

`snapshot` reads a tracemalloc snapshot of a running `up` and sorts its live memory by where it
was allocated (the innermost kubeplane functions), or with --owners by who keeps it (OWNERS: the
API server's stored JSON and decoded objects, the informers, the kubelets...). To take one, start
any benchmark with
  KP_TRACEMALLOC=/tmp/x/snap PYTHONPATH=src:benchmarks/tracemalloc_hook python benchmarks/density.py ...
(the hook writes the snapshot each time the traced memory grew by 8 %: the last file is the
peak; tracemalloc slows the run ~3 times, so keep sizes small: the shares are what counts).

`density DIR --replicas N --nodes M` runs the density scenario (a Deployment of N, then a rolling
update) in an `up` under that hook and takes snapshots at fixed points: DIR/tm.1 once all N are
available, DIR/tm.2 after the rolling update, DIR/tm the peak. `growth A B --pods N` prints, by
owner, what B holds more than A per pod (KB): two runs that differ by N replicas give the cost of
one more pod, which is what 10,000 pods multiply. `--watch-history` is scaled with the replicas
(50,000 events at 10,000 pods, as `up`'s default), so the history is as full as at 10,000, and so
is the part of it whose replaced versions are still decoded (watch_log.LEAN_LAG: 2,048 at 10,000).
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import pathlib
import shlex
import sys
import tempfile
from typing import Any

import msgspec
import orjson

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


# --- deep sizes --------------------------------------------------------------------------------

def reachable(obj: Any) -> dict[int, int]:
    """id -> sys.getsizeof of every object reachable from obj through containers, Structs and
    slotted or plain instances (types, functions and modules are not followed)."""
    seen: dict[int, int] = {}
    todo = [obj]
    while todo:
        o = todo.pop()
        if id(o) in seen or isinstance(o, (type, type(sys), type(reachable))):
            continue
        seen[id(o)] = sys.getsizeof(o)
        if isinstance(o, dict):
            todo.extend(o.keys())
            todo.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            todo.extend(o)
        elif isinstance(o, msgspec.Struct):
            todo.extend(getattr(o, f) for f in o.__struct_fields__)
        elif isinstance(o, (str, bytes, int, float, bool)) or o is None:
            pass
        else:
            for cls in type(o).__mro__:
                for s in getattr(cls, "__slots__", ()):
                    if hasattr(o, s):
                        todo.append(getattr(o, s))
            if hasattr(o, "__dict__"):
                todo.append(o.__dict__)
    return seen


def heap(make: Any, n: int = 200) -> int:
    """Heap bytes one make() result holds, by tracemalloc (what getsizeof cannot see: the
    allocation behind a bytes object may be larger than its length)."""
    import tracemalloc
    tracemalloc.start()
    try:
        keep = [make() for _ in range(n)]
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del keep
    return used // n


def own_size(make: Any) -> int:
    """Bytes one more object adds: the deep size of make(), minus what a second make() shares."""
    a, b = make(), make()
    ra, rb = reachable(a), reachable(b)
    return sum(size for i, size in ra.items() if i not in rb)


# --- objects -----------------------------------------------------------------------------------

async def sample_objects() -> dict[str, bytes]:
    """One of each kind, as stored by a small `up` after a Deployment came up."""
    from api_bench import Client, start_up, stop
    from density import deployment, kubectl, wait_nodes_ready
    with tempfile.TemporaryDirectory(prefix="kubeplane-memcost-") as tmp:
        proc, _ = start_up(pathlib.Path(tmp) / "up", "memory", ["--nodes", "2"])
        kubeconfig = pathlib.Path(tmp) / "up" / "kubeconfig"
        c = Client(kubeconfig, 2)
        try:
            await wait_nodes_ready(c, 2, 60)
            await kubectl(kubeconfig, "create", "namespace", "density")
            await kubectl(kubeconfig, "apply", "-f", "-", input=deployment(4, "nginx:1.25"))
            await kubectl(kubeconfig, "rollout", "status", "-n", "density", "deployment/density", "--timeout", "60s")
            out = {}
            for kind, path in (("Pod", "api/v1/namespaces/density/pods"), ("Node", "api/v1/nodes"),
                               ("Event", "api/v1/namespaces/density/events"),
                               ("ReplicaSet", "apis/apps/v1/namespaces/density/replicasets"),
                               ("Lease", "apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")):
                async with c.session.get(f"{c.server}/{path}") as r:
                    items = orjson.loads(await r.read())["items"]
                item = next((i for i in items if i.get("reason") == "Started"), items[0])
                out[kind] = orjson.dumps({"kind": kind, "apiVersion": _api_version(path), **item})
            return out
        finally:
            await c.close()
            stop(proc)


def _api_version(path: str) -> str:
    parts = path.split("/")
    return "v1" if parts[0] == "api" else f"{parts[1]}/{parts[2]}"


def object_costs(samples: dict[str, bytes]) -> list[tuple[str, dict[str, int]]]:
    from kubeplane.api import types
    from kubeplane.storage.interface import KeyValue, WatchEvent
    from kubeplane.storage.memory import encode
    rows = []
    for kind, data in samples.items():
        obj = orjson.loads(data)
        typ = types.kind_type(obj["apiVersion"], kind)
        row = {
            "json": len(data),
            "dumps": heap(lambda obj=obj: orjson.dumps(obj)),
            "bytes": heap(lambda obj=obj: encode(obj)),
            "dict": own_size(lambda data=data: orjson.loads(data)),
            "struct": own_size(lambda data=data, typ=typ: types.decode(data, typ)),
            "event": sys.getsizeof(KeyValue("k", b"", {}, 1, 1)) + sys.getsizeof(WatchEvent("ADDED", None, None, 1)),  # type: ignore[arg-type]
        }
        if kind == "Pod":
            from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
            pod = types.decode(data, typ)
            ni = NodeInfo()
            base = reachable(ni)
            ni.add_pod(pod)
            grown = reachable(ni)
            pod_ids = set(reachable(pod))
            row["nodeinfo"] = sum(s for i, s in grown.items() if i not in base and i not in pod_ids)
            pi = PodInfo(pod)
            _ = pi.requests, pi.non_zero_requests, pi.host_ports
            row["podinfo"] = sum(s for i, s in reachable(pi).items() if i not in pod_ids)
        rows.append((kind, row))
    return rows


def print_objects(rows: list[tuple[str, dict[str, int]]]) -> None:
    cols = ["json", "dumps", "bytes", "dict", "struct", "event", "nodeinfo", "podinfo"]
    print(f"{'kind':12s}" + "".join(f"{c:>10s}" for c in cols))
    for kind, row in rows:
        print(f"{kind:12s}" + "".join(f"{row[c]:10,d}" if c in row else f"{'':>10s}" for c in cols))


# --- snapshots ---------------------------------------------------------------------------------

def site(frame: Any) -> str:
    return f"{frame.filename.split('src/kubeplane/')[-1]}:{frame.lineno}"


_FUNCS: dict[str, list[tuple[int, int, str]]] = {}
_NAMES: dict[tuple[str, int], str] = {}


def function_of(frame: Any) -> str:
    """"storage/memory.py:encode": the function around a frame's line, read from the very file
    the snapshot ran (its absolute path), so snapshots of two checkouts compare by name."""
    name = _NAMES.get((frame.filename, frame.lineno))
    if name is None:
        name = _NAMES[frame.filename, frame.lineno] = _function_of(frame)
    return name


def _function_of(frame: Any) -> str:
    import ast
    spans = _FUNCS.get(frame.filename)
    if spans is None:
        spans = _FUNCS[frame.filename] = []
        try:
            tree = ast.parse(pathlib.Path(frame.filename).read_text())
        except (OSError, SyntaxError):
            tree = ast.Module(body=[], type_ignores=[])
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                spans.append((node.lineno, node.end_lineno or node.lineno, node.name))
    inner = [(start, name) for start, end, name in spans if start <= frame.lineno <= end]
    name = max(inner)[1] if inner else "<module>"
    return f"{frame.filename.split('src/kubeplane/')[-1]}:{name}"


# Who keeps what the density run allocates: the first rule whose function appears among a block's
# kubeplane frames (innermost first) names its owner. In `up` every component writes through
# the in-process transport, so the dicts a client builds (a typed object's to_dict, a status
# patch) become the stored object's own: the API server's.
OWNERS = [
    ("API server: stored JSON (KeyValue.value)", ("storage/memory.py:encode", "storage/sqlite.py:_decode")),
    ("API server: decoded objects (KeyValue.obj)", (
        "storage/memory.py:stamp", "apiserver/objects.py:mutable_copy", "apiserver/patch/merge.py:",
        "apiserver/handlers/subresources.py:_binding_copy", "client/rest.py:patch", "client/rest.py:_body",
        "storage/sqlite.py:", "storage/memory.py:")),
    ("informers (decoded Structs)", ("client/tools/cache/", "client/rest.py:watch", "client/rest.py:list")),
    ("event recorder", ("client/tools/record/",)),
    ("scheduler", ("scheduler/",)),
    ("kubelets", ("kubelet/",)),
    ("controllers", ("controller/",)),
    ("API server: other", ("apiserver/", "storage/", "api/")),
]


def owner_of(frames: list[Any]) -> str:
    names = [function_of(f) for f in frames if "kubeplane" in f.filename]
    if not names:
        return "(outside kubeplane)"
    for owner, prefixes in OWNERS:
        if any(n.startswith(prefixes) for n in names):
            return owner
    return "other kubeplane"


def summarize(path: str, top: int, depth: int, owners: bool = False) -> None:
    import tracemalloc
    snap = tracemalloc.Snapshot.load(path)
    total = sum(t.size for t in snap.traces)
    print(f"traced {total / 1e6:.1f} MB in {len(snap.traces):,} blocks")
    by_site: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    for tr in snap.traces:
        frames = list(reversed(tr.traceback))                       # innermost first
        if owners:
            key = owner_of(frames)
        else:
            names = [function_of(f) for f in frames if "kubeplane" in f.filename]
            key = " < ".join(names[:depth]) if names else "(outside kubeplane)"
        by_site[key] += tr.size
        count[key] += 1
    print(f"{'MB':>8s} {'blocks':>9s}  " + ("owner" if owners else "innermost kubeplane functions (callee < caller)"))
    for key, size in by_site.most_common(top):
        print(f"{size / 1e6:8.1f} {count[key]:9,d}  {key}")


def owner_sizes(path: str) -> dict[str, int]:
    import tracemalloc
    out: collections.Counter[str] = collections.Counter()
    for tr in tracemalloc.Snapshot.load(path).traces:
        out[owner_of(list(reversed(tr.traceback)))] += tr.size
    return out


def growth(a: str, b: str, pods: int) -> None:
    sa, sb = owner_sizes(a), owner_sizes(b)
    print(f"{'KB/pod':>8s} {'A MB':>8s} {'B MB':>8s}  owner")
    for owner in sorted(set(sa) | set(sb), key=lambda o: sa.get(o, 0) - sb.get(o, 0)):
        print(f"{(sb.get(owner, 0) - sa.get(owner, 0)) / pods / 1e3:8.1f} {sa.get(owner, 0) / 1e6:8.1f} "
              f"{sb.get(owner, 0) / 1e6:8.1f}  {owner}")
    print(f"{(sum(sb.values()) - sum(sa.values())) / pods / 1e3:8.1f} {sum(sa.values()) / 1e6:8.1f} "
          f"{sum(sb.values()) / 1e6:8.1f}  all")


def trace_up(out: pathlib.Path, replicas: int) -> None:
    """Have the `up` started next run under the tracemalloc hook, writing into out."""
    import os
    out.mkdir(parents=True, exist_ok=True)
    hook = pathlib.Path(__file__).resolve().parent / "tracemalloc_hook"
    os.environ["KP_TRACEMALLOC"] = str(out / "tm")
    os.environ["KP_LEAN_LAG"] = str(max(1, 2_048 * replicas // 10_000))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(hook)]))


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


async def density_snapshots(out: pathlib.Path, replicas: int, nodes: int, timeout: float,
                            up_args: list[str] | None = None) -> None:
    """The density scenario under the tracemalloc hook, with snapshots once all replicas are
    available (out/tm.1) and after the rolling update (out/tm.2); with
    `--up-args=--scheduler-process` the scheduler's process writes out/tm-scheduler.1 and .2 too."""
    import os
    import signal
    import time

    from api_bench import Client, start_up, stop
    from density import NS, deployment, kubectl, tree, wait_nodes_ready
    history = str(max(1_000, replicas * 5))                     # 50,000 at 10,000 pods
    with tempfile.TemporaryDirectory(prefix="kubeplane-memcost-") as tmp:
        proc, _ = start_up(pathlib.Path(tmp) / "up", "sqlite", ["--nodes", str(nodes), "--watch-history", history,
                                                                  *(up_args or [])])
        kubeconfig = pathlib.Path(tmp) / "up" / "kubeconfig"
        c = Client(kubeconfig, 2)

        async def available(n: int) -> None:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                async with c.session.get(f"{c.server}/apis/apps/v1/namespaces/{NS}/deployments/density") as r:
                    st = orjson.loads(await r.read()).get("status") or {}
                if st.get("availableReplicas") == n and st.get("updatedReplicas") == n and st.get("replicas") == n:
                    return
                await asyncio.sleep(1)
            raise TimeoutError(f"{n} replicas not available in {timeout} s")

        async def snapshot(n: int) -> None:
            await asyncio.sleep(5)                                  # let the last writes settle
            proc.send_signal(signal.SIGUSR1)
            for pid in tree(proc.pid)[1:]:                          # --scheduler-process's child (traced too)
                if b"\0scheduler\0" in _cmdline(pid):
                    os.kill(pid, signal.SIGUSR1)
            while not await asyncio.to_thread(os.path.exists, out / f"tm.{n}"):
                await asyncio.sleep(1)
            print(f"snapshot {out / f'tm.{n}'}", file=sys.stderr)

        try:
            await wait_nodes_ready(c, nodes, timeout)
            await kubectl(kubeconfig, "create", "namespace", NS)
            await kubectl(kubeconfig, "apply", "-f", "-", input=deployment(replicas, "nginx:1.25"))
            await available(replicas)
            await snapshot(1)
            await kubectl(kubeconfig, "set", "image", "-n", NS, "deployment/density", "c=nginx:1.27")
            await available(replicas)
            await snapshot(2)
        finally:
            await c.close()
            stop(proc)


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("objects")
    d = sub.add_parser("density")
    d.add_argument("dir", type=pathlib.Path)
    d.add_argument("--replicas", type=int, default=1000)
    d.add_argument("--nodes", type=int, default=100)
    d.add_argument("--timeout", type=float, default=900.0)
    d.add_argument("--up-args", type=shlex.split, default=[], metavar="ARGS", help="more flags for `up`")
    g = sub.add_parser("growth")
    g.add_argument("a")
    g.add_argument("b")
    g.add_argument("--pods", type=int, required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("file")
    s.add_argument("--top", type=int, default=40)
    s.add_argument("--depth", type=int, default=3)
    s.add_argument("--owners", action="store_true", help="group by owner (OWNERS) instead of by function")
    args = p.parse_args()
    if args.cmd == "objects":
        print_objects(object_costs(asyncio.run(sample_objects())))
    elif args.cmd == "density":
        trace_up(args.dir, args.replicas)
        asyncio.run(density_snapshots(args.dir, args.replicas, args.nodes, args.timeout, args.up_args))
    elif args.cmd == "growth":
        growth(args.a, args.b, args.pods)
    else:
        summarize(args.file, args.top, args.depth, args.owners)


if __name__ == "__main__":
    main()
