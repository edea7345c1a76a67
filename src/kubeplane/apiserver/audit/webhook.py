"""The audit webhook backend: events POSTed as an audit.k8s.io/v1 EventList to a remote service.

    kubeplane up --audit-policy-file policy.yaml --audit-webhook-config-file webhook.kubeconfig

Upstream: plugin/pkg/audit/webhook (backend.processEvents), GenericWebhook and LoadKubeconfig
(apiserver/pkg/util/webhook/webhook.go), wrapped by AuditWebhookOptions (options/audit.go).

- Where: --audit-webhook-config-file is a kubeconfig; its current context's cluster is the
  receiver (`server` is the URL POSTed to, path included; `certificate-authority[-data]`,
  `insecure-skip-tls-verify`, `tls-server-name`) and its user the credentials (a bearer token,
  a client certificate, basic auth: admission/webhook/authentication.auth_info_from_user).
- What: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[...]}`, each
  item an Event as the log backend writes it, less its kind and apiVersion (a list's items carry
  none on the wire), Content-Type application/json; a 2xx answer is success.
- Failures are retried whatever they are (upstream's retryOnError: an audit event is worth a
  retry): 5 attempts in all, waiting --audit-webhook-initial-backoff (10 s), then 1.5 times
  longer each time, each wait up to 20 % longer at random (DefaultRetryBackoffWithInitialDelay);
  then the events are lost, counted in apiserver_audit_error_total{plugin="webhook"} and logged.
- Modes (--audit-webhook-mode, buffered.py): batch (the default: up to 400 events a batch, at
  least every 30 s, at most 10 batches a second, bursts of 15; each batch sent by a worker
  thread so a slow receiver delays no other batch — upstream's AsyncDelegate), blocking and
  blocking-strict (the request waits while its one event is sent, retries included).

Threads, not the event loop: the loop only hands the encoded line over; the batching thread and
the sender threads do the waiting and the HTTP (http.client: blocking I/O releases the GIL),
so a slow or dead receiver costs the API server's loop nothing.
"""
from __future__ import annotations

import asyncio
import base64
import http.client
import logging
import pathlib
import queue
import random
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ...client.transport import load_client_cert
from ..admission.webhook.authentication import auth_info_from_user, read_document
from . import metrics
from . import policy as p
from .buffered import MODE_BATCH, MODE_BLOCKING_STRICT, BatchOptions

if TYPE_CHECKING:
    from .event import AuditContext

log = logging.getLogger(__name__)

PLUGIN_NAME = "webhook"
DEFAULT_INITIAL_BACKOFF = 10.0          # upstream: DefaultInitialBackoffDelay
REQUEST_TIMEOUT = 30.0                  # upstream: defaultRequestTimeout
RETRY_STEPS, RETRY_FACTOR, RETRY_JITTER = 5, 1.5, 0.2
SENDERS = 8                             # batches in flight at once (upstream: a goroutine each)
MAX_ERROR_BODY = 2048

# Upstream: defaultWebhookBatchConfig
DEFAULT_BATCH = BatchOptions(MODE_BATCH, buffer_size=10_000, max_batch_size=400, max_batch_wait=30.0,
                             throttle_enable=True, throttle_qps=10.0, throttle_burst=15)

_EVENT_PREFIX = b'{"kind":"Event","apiVersion":"' + p.GROUP_VERSION.encode() + b'",'
_LIST_PREFIX = b'{"kind":"EventList","apiVersion":"' + p.GROUP_VERSION.encode() + b'","metadata":{},"items":['


class WebhookError(Exception):
    """A POST that failed (transport error or a non-2xx answer)."""


@dataclass(frozen=True, slots=True)
class WebhookClient:
    """Where and how events are POSTed (from the kubeconfig)."""
    url: str
    ssl_context: ssl.SSLContext | None
    headers: tuple[tuple[str, str], ...]
    server_hostname: str | None = None

    @classmethod
    def from_kubeconfig(cls, path: str | pathlib.Path) -> WebhookClient:
        """Upstream: LoadKubeconfig (the current context, else the only one); ValueError naming the problem."""
        cfg = read_document(pathlib.Path(path))
        contexts = [c for c in cfg.get("contexts") or () if isinstance(c, dict)]
        current = cfg.get("current-context")
        ctx = next((c.get("context") or {} for c in contexts if c.get("name") == current),
                   (contexts[0].get("context") or {}) if len(contexts) == 1 else None)
        clusters = [c for c in cfg.get("clusters") or () if isinstance(c, dict)]
        if ctx is None:
            if len(clusters) != 1:
                raise ValueError("invalid configuration: no configuration has been provided")
            ctx = {"cluster": clusters[0].get("name")}
        cluster = next((c.get("cluster") or {} for c in clusters if c.get("name") == ctx.get("cluster")), None)
        if not cluster or not cluster.get("server"):
            raise ValueError("invalid configuration: no configuration has been provided, try setting "
                             "KUBERNETES_MASTER environment variable")
        user = next((u.get("user") or {} for u in cfg.get("users") or ()
                     if isinstance(u, dict) and u.get("name") == ctx.get("user")), {})
        auth = auth_info_from_user(user)
        if auth.error:
            raise ValueError(auth.error)
        url = str(cluster["server"])
        ctx_ssl = _tls_context(cluster, auth.client_cert) if url.startswith("https://") else None
        return cls(url, ctx_ssl, auth.headers, cluster.get("tls-server-name") or None)

    def post(self, body: bytes) -> None:
        """POST body; raises WebhookError. Blocking: called from the backend's threads."""
        u = urlsplit(self.url)
        path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        conn: http.client.HTTPConnection
        if u.scheme == "https":
            conn = _HTTPSConnection(u.hostname or "", u.port or 443, self.ssl_context, self.server_hostname,
                                    timeout=REQUEST_TIMEOUT)
        else:
            conn = http.client.HTTPConnection(u.hostname or "", u.port or 80, timeout=REQUEST_TIMEOUT)
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*",
                   "User-Agent": "kube-apiserver-audit"}
        try:
            conn.putrequest("POST", path, skip_accept_encoding=True)
            for k, v in (*headers.items(), *self.headers):
                conn.putheader(k, v)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            data = resp.read(MAX_ERROR_BODY)
        except Exception as e:       # any failure is one to retry (OSError, TLS, HTTP, a bad URL)
            raise WebhookError(f'Post "{self.url}": {e or type(e).__name__}') from None
        finally:
            conn.close()
        if not 200 <= resp.status < 300:
            raise WebhookError(f"the server responded with the status code {resp.status}: "
                               f"{data.decode('utf-8', 'replace').strip()}")


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPS with the certificate checked for tls-server-name when the kubeconfig gives one."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext | None, server_hostname: str | None,
                 timeout: float) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self._server_hostname = server_hostname

    def connect(self) -> None:
        if not self._server_hostname:
            return super().connect()
        http.client.HTTPConnection.connect(self)
        assert self._context is not None            # type: ignore[attr-defined]
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._server_hostname)  # type: ignore


def _tls_context(cluster: dict[str, Any], client_cert: tuple[bytes, bytes] | None) -> ssl.SSLContext:
    try:
        if cluster.get("insecure-skip-tls-verify"):
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            ca = cluster.get("certificate-authority-data")
            ca_pem = base64.b64decode(str(ca)).decode() if ca else (
                pathlib.Path(str(cluster["certificate-authority"])).read_text()
                if cluster.get("certificate-authority") else None)
            ctx = ssl.create_default_context(cadata=ca_pem)
        if client_cert is not None:
            load_client_cert(ctx, *client_cert)
    except (OSError, ValueError, ssl.SSLError) as e:
        raise ValueError(f"unable to load the audit webhook's TLS configuration: {e}") from None
    return ctx


def event_list(lines: list[bytes]) -> bytes:
    """The EventList of the events' JSON lines (each less its kind and apiVersion)."""
    items = [b"{" + line[len(_EVENT_PREFIX):].rstrip(b"\n") if line.startswith(_EVENT_PREFIX) else line.rstrip(b"\n")
             for line in lines]
    return _LIST_PREFIX + b",".join(items) + b"]}"


def with_exponential_backoff(fn: Callable[[], None], initial: float, sleep: Callable[[float], None],
                             jitter: Callable[[], float] = random.random) -> None:
    """Call fn until it succeeds, RETRY_STEPS attempts at most, the waits growing by RETRY_FACTOR
    with up to RETRY_JITTER more at random; raise its last error. Upstream: WithExponentialBackoff
    with wait.Backoff{initial, 1.5, 0.2, 5} and retryOnError. Example, initial 10 s: waits of
    10, 15, 22.5 and 33.75 s (each up to 20 % longer), five attempts over about 81-98 s."""
    delay = initial
    for attempt in range(RETRY_STEPS):
        try:
            fn()
            return
        except WebhookError:
            if attempt == RETRY_STEPS - 1:
                raise
        sleep(delay + delay * RETRY_JITTER * jitter() if RETRY_JITTER > 0 else delay)
        delay *= RETRY_FACTOR


class WebhookBackend:
    """The webhook backend in its mode (see the module docstring). `sleep` and `now` are the
    threads' clock (tests pass fakes)."""

    def __init__(self, client: WebhookClient, *, batch: BatchOptions = DEFAULT_BATCH,
                 initial_backoff: float = DEFAULT_INITIAL_BACKOFF,
                 sleep: Callable[[float], None] | None = None, now: Callable[[], float] | None = None) -> None:
        import time
        self.client = client
        self.batch = batch
        self.initial_backoff = initial_backoff
        self.sleep = sleep or time.sleep
        self.now = now or time.monotonic
        self.sent = 0                      # events delivered
        self.failed = 0                    # events lost after the retries
        self.dropped = 0                   # events that found the buffer full
        self.senders = ThreadPoolExecutor(SENDERS, thread_name_prefix="audit-webhook")
        self.buffer: queue.Queue[bytes | None] = queue.Queue(batch.buffer_size if batch.mode == MODE_BATCH else 0)
        self.batcher: threading.Thread | None = None
        if batch.mode == MODE_BATCH:
            self.throttle = batch.throttle(self.sleep, self.now)
            self.batcher = threading.Thread(target=self._run, name="audit-webhook-batch", daemon=True)
            self.batcher.start()

    # --- the loop's side ------------------------------------------------------------------------

    def process(self, ac: AuditContext, stage: str, stage_timestamp: str, line: bytes | None = None) -> Any:
        line = line or ac.encode(stage, stage_timestamp)
        if self.batch.mode == MODE_BATCH:
            try:
                self.buffer.put_nowait(line)
            except queue.Full:
                self.dropped += 1
                metrics.plugin_error("buffered")
                log.error("Error in audit plugin 'buffered' affecting 1 audit events: audit buffer queue blocked",
                          extra={"auditID": ac.audit_id, "stage": stage})
            return True
        fut = asyncio.get_running_loop().run_in_executor(self.senders, self._send, [line])
        if self.batch.mode == MODE_BLOCKING_STRICT:
            return fut
        return _ignore_errors(fut)

    def shutdown(self) -> None:
        """Send what is buffered and wait for every batch in flight (retries included)."""
        if self.batcher is not None:
            self.buffer.put(None)
            self.batcher.join()
        self.senders.shutdown(wait=True)

    # --- the threads' side ----------------------------------------------------------------------

    def _send(self, lines: list[bytes]) -> bool:
        """POST one batch with retries; whether it was delivered (a loss is counted and logged)."""
        body = event_list(lines)
        try:
            with_exponential_backoff(lambda: self.client.post(body), self.initial_backoff, self.sleep)
        except WebhookError as e:
            self.failed += len(lines)
            metrics.plugin_error(PLUGIN_NAME, len(lines))
            log.error("Error in audit plugin '%s' affecting %d audit events: %s", PLUGIN_NAME, len(lines), e)
            return False
        self.sent += len(lines)
        return True

    def _run(self) -> None:
        """Upstream: bufferedBackend.processIncomingEvents — collect a batch (max size, or the
        ticker), wait for the throttle, hand it to a sender; at shutdown, the rest."""
        wait = self.batch.max_batch_wait
        next_tick = self.now() + wait if wait > 0 else None
        stopping = False
        while not stopping:
            batch: list[bytes] = []
            while len(batch) < self.batch.max_batch_size:
                timeout = None if next_tick is None else max(0.0, next_tick - self.now())
                try:
                    line = self.buffer.get(timeout=timeout)
                except queue.Empty:           # the ticker fired: send what there is
                    break
                if line is None:
                    stopping = True
                    break
                batch.append(line)
            if next_tick is not None and self.now() >= next_tick:
                next_tick += wait * max(1, int((self.now() - next_tick) // wait) + 1)
            if not batch:
                continue
            if self.throttle is not None:
                self.throttle.accept()
            self.senders.submit(self._send, batch)


async def _ignore_errors(fut: asyncio.Future[bool]) -> bool:
    """blocking mode: the request waits for the send, whatever its result. Upstream: ignoreErrorsBackend."""
    await fut
    return True
