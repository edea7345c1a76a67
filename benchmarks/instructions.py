"""Instructions per request (callgrind): a load-independent figure for the request path.

Run:  .venv/bin/python benchmarks/instructions.py [--src DIR ...] [--mode inprocess|protocol|https]
          [--op create|get] [-n 1000] [--skip-admission NAMES] [--off PARTS]
          [--authorization-mode MODES] [--credential x509|token]

Wall and CPU time on this shared machine move with whatever else runs; valgrind's instruction
count does not (two runs agree within ~0.1 %), so two checkouts can be compared while helpers
work. Instructions are not time (a system call or a cache miss costs more than its count), so
a change found here is confirmed with api_bench.py / api_cpu.py on a quiet machine.

- inprocess: APIServer.handle (authentication, authorization, admission, validation, the
  memory store) with JSON bodies, as the HTTPS front end hands them over, on a server set up
  as `kubeplane up` sets it up: --authorization-mode Node,RBAC with the bootstrap policy and
  kubeadm's bindings, the admin authenticated by its client certificate (kubectl's admin.conf:
  kubernetes-admin in kubeadm:cluster-admins, so RBAC decides; the certificate converted once
  per connection, as serving.py does) or, with --credential token, by the bearer token of the
  token file (its user is also in system:masters, decided before RBAC).
  `--authorization-mode AlwaysAllow --credential token` is the set-up of the figures before
  session 12 (a token user without groups, no authorizer).
- protocol: the same server behind the HTTP front end (serving.py's protocol, app.py) on a
  fake transport (the token credential): the bytes of a kubectl-like request in, the response out, no TLS or sockets;
  its difference to inprocess is the front end's cost.
- https: `kubeplane up --no-controllers` (SQLite) under valgrind, driven over HTTPS by 8
  connections from this process (not counted): the whole server — TLS, HTTP parsing, the ASGI
  glue and the SQLite committer thread included, the kernel's share not. The client presents
  the admin's bearer token (api_bench.py's default) or, --credential x509, its certificate.
Only the measured requests are counted (instrumentation is switched on after a warm-up).
--src compares checkouts (each DIR holding src/kubeplane), e.g. a worktree of an older commit.
--skip-admission leaves plugins out of the chain (inprocess only; `all` for every one).

--off authn,authz,admission (or all) switches parts of issue 12's chain off, to state its
criterion ("authentication + authorization + admission add at most 15 % to a pod create"):
authn: the request reaches APIServer.route_trusted with the user authentication would have
found (in process only: kube-apiserver has no flag that skips authentication); authz: the
AlwaysAllow authorizer; admission: an empty chain. Over HTTPS they are `up` flags, the same
api_bench.py takes as `--up-args "--no-controllers --authorization-mode=AlwaysAllow
--disable-admission-plugins=<every plugin>"` (ADMISSION_OFF below). `--off compare` runs the
whole chain, each part off alone and all off, and prints the ratio and each part's share.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"generateName": "web-", "namespace": "default", "labels": {"app": "web"}},
       "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                               "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def _callgrind(out: pathlib.Path) -> list[str]:
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]


def _total(data: pathlib.Path) -> int:
    """The instructions counted, summed over the dumps callgrind wrote."""
    return sum(int(line.split()[1]) for f in data.glob("cg.out*")
               for line in f.read_text(errors="replace").splitlines() if line.startswith("totals:"))


def _switch(pid: int, on: bool) -> None:
    """callgrind_control -i on|off. Spawned and waited for with two system calls: whatever
    the switching process runs after the switch is counted (subprocess.run's Python would add
    ~7 million instructions to each figure)."""
    child = os.posix_spawnp("callgrind_control", ["callgrind_control", "-i", "on" if on else "off", str(pid)],
                            os.environ, file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)])
    os.waitpid(child, 0)


# --- in process (this script re-runs itself under valgrind with --child) --------------------------


async def _server(authz: str, credential: str):
    """An APIServer set up as `kubeplane up` sets it up (see the module docstring), and the
    request headers and certificate identity of its admin."""
    from kubeplane.apiserver.server import APIServer
    from kubeplane.storage import new_storage
    hdr = {"authorization": "Bearer t", "content-type": "application/json"}
    try:
        from kubeplane.apiserver.authentication.tokenfile import TokenFile
        from kubeplane.apiserver.authentication.user import CREDENTIAL_ID_KEY, UserInfo, authenticated
        from kubeplane.apiserver.authentication.x509 import X509Identity
        from kubeplane.apiserver.authorization import modes
        from kubeplane.apiserver.authorization.rbac.reconcile import ensure_objects
        from kubeplane.apiserver.options import ServerRunOptions
        from kubeplane.cmd import identities
    except ImportError:                  # a checkout before issue 12: a token, nothing authorized
        api = APIServer(new_storage("memory"), tokens={"t": "admin"})
        await api.bootstrap()
        return api, hdr, None
    if authz == "AlwaysAllow" and credential == "token":     # the figures before session 12
        api = APIServer(new_storage("memory"), tokens={"t": "admin"})
        await api.bootstrap()
        return api, hdr, None
    mode_list = tuple(authz.split(","))
    tokens = TokenFile({"t": authenticated("kubernetes-admin", "system:masters", "kubeadm:cluster-admins")})
    api = APIServer(new_storage("memory"), options=ServerRunOptions(authorization_modes=mode_list), token_file=tokens)
    api.client_ca = True
    await api.bootstrap()
    if modes.RBAC in mode_list:          # cmd/up.py bootstrap: kubeadm's bindings
        await ensure_objects(api, identities.kubeadm_policy(modes.has_node_authorizer(mode_list)))
        await modes.synced(api)
    x509 = None
    if credential == "x509":
        del hdr["authorization"]
        admin = UserInfo("kubernetes-admin", "", ("kubeadm:cluster-admins", "system:authenticated"),
                         ((CREDENTIAL_ID_KEY, ("X509SHA256=" + "ab" * 32,)),))
        x509 = X509Identity(admin, 4102444800.0)        # 2100-01-01
    return api, hdr, x509


async def _protocol(api: Any, op: str, body: bytes) -> Callable[[], Awaitable[None]]:
    """A request as kubectl sends it, fed to the HTTP protocol on a fake transport from the event
    loop (as a transport does); returns once the response is written."""
    import uvicorn
    from uvicorn.server import ServerState

    from kubeplane.apiserver.app import ASGIApp
    from kubeplane.apiserver.serving import ServingOptions

    class Wire(asyncio.Transport):
        def __init__(self) -> None:
            super().__init__()
            self.writes = 0

        def write(self, data: Any) -> None:
            self.writes += 1

        def get_extra_info(self, name: str, default: Any = None) -> Any:
            return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 6443)}.get(name, default)

        def is_closing(self) -> bool:
            return False

    config = uvicorn.Config(ASGIApp(api), loop="none", http=ServingOptions().protocol(), lifespan="off",  # type: ignore[arg-type]
                            log_level="warning", access_log=False, ws="none", proxy_headers=False)
    config.load()
    loop = asyncio.get_running_loop()
    proto = config.http_protocol_class(config=config, server_state=ServerState(), app_state={}, _loop=loop)  # type: ignore[call-arg]
    wire = Wire()
    proto.connection_made(wire)
    head = (b"Host: 127.0.0.1:6443\r\nUser-Agent: kubectl/v1.37.0 (linux/amd64) kubernetes/abc\r\n"
            b"Accept: application/json, */*\r\nAuthorization: Bearer t\r\nAccept-Encoding: gzip\r\n")
    if op == "get":
        raw = b"GET /api/v1/namespaces/default HTTP/1.1\r\n" + head + b"\r\n"
    else:
        raw = (b"POST /api/v1/namespaces/default/pods HTTP/1.1\r\n" + head + b"Content-Type: application/json\r\n"
               b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def one() -> None:
        k = wire.writes
        loop.call_soon(proto.data_received, raw)
        while wire.writes == k:
            await asyncio.sleep(0)

    return one


async def _child(op: str, n: int, skip: str, off: str, authz: str, credential: str, mode: str = "inprocess") -> None:
    import gc

    import orjson

    from kubeplane.apiserver.admission.interface import Operation
    from kubeplane.apiserver.request import Request

    api, hdr, x509 = await _server(authz, credential)

    def request(method: str, path: str, body: bytes) -> Request:
        r = Request.build(method, path, "", dict(hdr), body)
        if x509 is not None:
            r.x509 = x509
        return r

    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    await api.handle(request("POST", "/api/v1/namespaces/default/serviceaccounts", orjson.dumps(sa)))
    offs = set(off.split(",")) if off else set()
    if "all" in offs:
        offs |= {"authn", "authz", "admission"}
    if "admission" in offs:
        skip = "all"
    if skip:
        names, chain = skip.split(","), api.admission
        for o in Operation:
            chain._admitters[o] = [p for p in chain._admitters[o] if p.NAME not in names and "all" not in names]
            chain._validators[o] = [p for p in chain._validators[o] if p.NAME not in names and "all" not in names]
        chain._routes.clear()
        if "all" in names:
            getattr(chain, "_sleepers", []).clear()     # webhooks and policies: never woken
    if "authz" in offs:
        from kubeplane.apiserver.authorization.authorizer import AlwaysAllow
        api.authorizer = AlwaysAllow()
    user = None
    if "authn" in offs:                  # the user authentication finds, without finding it
        probe = request("GET", "/version", b"")
        await api.authenticate(probe)
        user = probe.user

    body = orjson.dumps(POD)
    gc.set_threshold(50000, 50, 100)        # as few collections as `up`'s tuning makes (utils/gc_tuning.py)

    async def direct() -> None:
        r = request("GET", "/api/v1/namespaces/default", b"") if op == "get" else \
            request("POST", "/api/v1/namespaces/default/pods", body)
        if user is None:
            resp = await api.handle(r)
        else:
            r.user = user
            resp = await api.route_trusted(r)
        assert resp.status == (200 if op == "get" else 201), resp.body

    one = await _protocol(api, op, body) if mode == "protocol" else direct
    for _ in range(200):
        await one()
    _switch(os.getpid(), True)
    for _ in range(n):
        await one()
    _switch(os.getpid(), False)


def inprocess(src: str, op: str, n: int, skip: str, off: str = "", authz: str = "Node,RBAC",
              credential: str = "x509", mode: str = "inprocess") -> int:
    with tempfile.TemporaryDirectory(prefix="instructions-") as tmp:
        data = pathlib.Path(tmp)
        env = dict(os.environ, PYTHONPATH=f"{src}/src")
        subprocess.run([*_callgrind(data / "cg.out"), sys.executable, __file__, "--child", "--op", op,
                        "-n", str(n), "--skip-admission", skip, "--off", off, "--authorization-mode", authz,
                        "--credential", credential, "--mode", mode],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return _total(data)


# --- over HTTPS -------------------------------------------------------------------------------------


def up_args(off: str) -> list[str]:
    """`kubeplane up` flags that switch parts of the chain off (api_bench.py's --up-args)."""
    offs = set(off.split(",")) if off else set()
    if offs & {"authn", "all"}:
        raise SystemExit("--off authn: kube-apiserver has no flag that skips authentication; measure it in process")
    args = []
    if "authz" in offs:
        args.append("--authorization-mode=AlwaysAllow")
    if "admission" in offs:
        args.append("--disable-admission-plugins=" + ADMISSION_OFF)
    return args


# Every admission plugin kubeplane ships (cmd/flags.py admission_plugins accepts these names).
ADMISSION_OFF = ("NamespaceLifecycle,LimitRanger,ServiceAccount,NodeRestriction,TaintNodesByCondition,PodSecurity,"
                 "Priority,DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,"
                 "PersistentVolumeClaimResize,RuntimeClass,CertificateApproval,CertificateSigning,"
                 "ClusterTrustBundleAttest,CertificateSubjectRestriction,DefaultIngressClass,MutatingAdmissionPolicy,"
                 "MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,ResourceQuota")


def https(src: str, op: str, n: int, workers: int = 8, off: str = "", credential: str = "token") -> int:
    sys.path.insert(0, str(HERE))
    from api_bench import Client

    if credential == "x509":
        os.environ["KUBEPLANE_BENCH_AUTH"] = "x509"
    with tempfile.TemporaryDirectory(prefix="instructions-") as tmp:
        data = pathlib.Path(tmp)
        env = dict(os.environ, PYTHONPATH=f"{src}/src")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        proc = subprocess.Popen([*_callgrind(data / "cg.out"), sys.executable, "-m", "kubeplane", "up",
                                 "--data-dir", str(data / "d"), "--port", "0", "--nodes", "0", "--no-controllers",
                                 *up_args(off)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        assert proc.stdout is not None
        seen = b""
        while b"ready" not in (line := proc.stdout.readline()):
            if not line:
                raise RuntimeError(seen.decode())
            seen += line
        threading.Thread(target=proc.stdout.read, daemon=True).start()

        async def requests(c: Client, prefix: str, count: int) -> None:
            todo = iter(range(count))

            async def loop() -> None:
                for k in todo:
                    if op == "get":
                        async with c.session.get(f"{c.server}/api/v1/namespaces/default") as r:
                            assert r.status == 200
                            await r.read()
                        continue
                    pod = {**POD, "metadata": {"name": f"{prefix}-{k}", "labels": {"app": "web"}}}
                    async with c.session.post(f"{c.server}/api/v1/namespaces/default/pods", data=json.dumps(pod)) as r:
                        assert r.status == 201, await r.text()
                        await r.read()
            await asyncio.gather(*(loop() for _ in range(workers)))

        async def run() -> None:
            c = Client(data / "d" / "kubeconfig", workers)
            sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
            async with c.session.post(f"{c.server}/api/v1/namespaces/default/serviceaccounts",
                                      data=json.dumps(sa)) as r:
                assert r.status in (201, 409)
            await requests(c, "warm", 300)
            _switch(proc.pid, True)
            await requests(c, "p", n)
            _switch(proc.pid, False)
            await c.close()

        try:
            asyncio.run(run())
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], stdout=subprocess.DEVNULL)
        finally:
            os.killpg(proc.pid, 15)
            proc.wait(60)
        return _total(data)


PARTS = ("authn", "authz", "admission")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", action="append", help="a checkout holding src/kubeplane (repeatable)")
    ap.add_argument("--mode", choices=("inprocess", "protocol", "https"), default="inprocess")
    ap.add_argument("--op", choices=("create", "get"), default="create")
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--skip-admission", default="")
    ap.add_argument("--off", default="", help="authn,authz,admission, all, or compare (see the docstring)")
    ap.add_argument("--authorization-mode", default="Node,RBAC", help="inprocess: as `up`'s flag")
    ap.add_argument("--credential", choices=("x509", "token"), default=None,
                    help="the admin's client certificate or bearer token (default: x509 in process, token over https)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.mode == "protocol":            # `up`'s loop
            import uvloop
            uvloop.install()
        asyncio.run(_child(args.op, args.n, args.skip_admission, args.off, args.authorization_mode,
                           args.credential or ("token" if args.mode == "protocol" else "x509"), args.mode))
        return
    inproc = args.mode != "https"
    credential = args.credential or ("x509" if args.mode == "inprocess" else "token")

    def count(src: str, off: str) -> int:
        if inproc:
            return inprocess(src, args.op, args.n, args.skip_admission, off, args.authorization_mode, credential,
                             args.mode)
        return https(src, args.op, args.n, off=off, credential=credential)

    for src in args.src or [str(HERE.parent)]:
        if args.off != "compare":
            total = count(src, args.off)
            label = f" (off: {args.off})" if args.off else ""
            print(f"{src}: {args.mode} {args.op}{label}: {total // args.n:,} instructions each (n={args.n})", flush=True)
            continue
        parts = PARTS if inproc else PARTS[1:]
        whole, none = count(src, ""), count(src, ",".join(parts))
        print(f"{src}: {args.mode} {args.op}: whole chain {whole // args.n:,}, {'+'.join(parts)} off "
              f"{none // args.n:,} instructions each: +{100 * (whole - none) / none:.1f} % (n={args.n})", flush=True)
        for part in parts:
            without = count(src, part)
            print(f"  {part}: {(whole - without) // args.n:,} instructions each, "
                  f"{100 * (whole - without) / none:.1f} % of the {args.op} without the chain", flush=True)


if __name__ == "__main__":
    main()
