"""The webhooks of every Mutating- or ValidatingWebhookConfiguration, kept current from storage.

Upstream: the configuration managers (plugin/webhook/configuration/*_manager.go) keep an
informer's list, sorted by configuration name, each webhook wrapped in an accessor that parses
its selectors once (webhook/accessors.go). Here the source lists the configurations once and
then reads a storage watch opened after that revision: `webhooks()` asks the watcher for what
changed (storage/watch_log.py changes(): between writes under the prefix, a look at one future)
and returns the same compiled list while nothing did. So a write with no webhook configured
costs one such look, never a storage list.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....api import labels
from ....storage.interface import Compacted, Storage
from .predicates import SelectorError, parse_selector

Obj = dict[str, Any]


@dataclass(slots=True, frozen=True)
class WebhookAccessor:
    """One webhook of a configuration, with what a request needs from it parsed once.
    Upstream: WebhookAccessor (plugin/webhook/accessors.go)."""
    uid: str                       # <configuration>/<webhook>/<index>: tells same-named webhooks apart
    configuration_name: str
    name: str
    hook: Obj                      # the webhook as stored (defaulted)
    rules: tuple[Obj, ...]
    namespace_selector: labels.Selector | SelectorError
    object_selector: labels.Selector | SelectorError
    ignore_failures: bool          # failurePolicy: Ignore
    equivalent: bool               # matchPolicy: Equivalent
    reinvoke_if_needed: bool       # reinvocationPolicy: IfNeeded (mutating)
    timeout: float
    match_conditions: tuple[Obj, ...]


def compile_webhook(config_name: str, index: int, hook: Obj) -> WebhookAccessor:
    name = str(hook.get("name") or "")
    timeout = hook.get("timeoutSeconds")
    return WebhookAccessor(
        uid=f"{config_name}/{name}/{index}",
        configuration_name=config_name,
        name=name,
        hook=hook,
        rules=tuple(r for r in hook.get("rules") or () if isinstance(r, dict)),
        namespace_selector=parse_selector(hook.get("namespaceSelector")),
        object_selector=parse_selector(hook.get("objectSelector")),
        ignore_failures=hook.get("failurePolicy") == "Ignore",
        equivalent=hook.get("matchPolicy", "Equivalent") == "Equivalent",
        reinvoke_if_needed=hook.get("reinvocationPolicy") == "IfNeeded",
        timeout=float(timeout) if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0 else 10.0,
        match_conditions=tuple(c for c in hook.get("matchConditions") or () if isinstance(c, dict)),
    )


class WebhookSource:
    """The webhooks of every configuration under prefix, configurations in name order."""

    def __init__(self, storage: Storage, prefix: str) -> None:
        self.storage = storage
        self.prefix = prefix
        self._configs: dict[str, Obj] = {}          # key -> configuration
        self._hooks: list[WebhookAccessor] = []
        self._watcher: Any = None
        self._changes: Any = None          # the watcher's changes(), None: sync() must list

    def webhooks(self) -> list[WebhookAccessor] | None:
        """The current webhooks (read-only), or None when sync() must list first."""
        changes = self._changes
        if changes is None:
            return None
        try:
            events = changes()
        except Compacted:
            return None
        if events:
            for ev in events:
                if ev.type == "DELETED":
                    self._configs.pop(ev.kv.key, None)
                else:
                    self._configs[ev.kv.key] = ev.kv.obj
            self._compile()
        return self._hooks

    async def sync(self) -> list[WebhookAccessor]:
        """List the configurations and watch from there on; the current webhooks."""
        hooks = self.webhooks()
        if hooks is not None:
            return hooks
        kvs, rev = await self.storage.list(self.prefix)
        self._configs = {kv.key: kv.obj for kv in kvs}
        self._compile()
        if self._watcher is not None:
            self._watcher.stop()
        watcher = self.storage.watch(self.prefix, rev)
        if hasattr(watcher, "changes"):
            self._watcher, self._changes = watcher, watcher.changes
        else:                                     # a store without changes(): list every time
            watcher.stop()
            self._watcher = self._changes = None
        return self._hooks

    def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = self._changes = None

    def _compile(self) -> None:
        """Upstream: the configurations sorted by name, each one's webhooks in order."""
        hooks = []
        for cfg in sorted(self._configs.values(), key=lambda c: (c.get("metadata") or {}).get("name") or ""):
            cfg_name = (cfg.get("metadata") or {}).get("name") or ""
            for i, h in enumerate(cfg.get("webhooks") or ()):
                if isinstance(h, dict):
                    hooks.append(compile_webhook(cfg_name, i, h))
        self._hooks = hooks
