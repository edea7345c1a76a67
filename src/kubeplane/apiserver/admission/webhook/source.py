"""The webhooks of every Mutating- or ValidatingWebhookConfiguration, kept current from storage.

Upstream: the configuration managers (plugin/webhook/configuration/*_manager.go) keep an
informer's list, sorted by configuration name, each webhook wrapped in an accessor that parses
its selectors once (webhook/accessors.go). Here the configurations are a PrefixIndex (listed
once, then following a storage watch): `webhooks()` polls it (between writes under the prefix,
a look at one future) and returns the same compiled list while nothing changed. So a write
with no webhook configured costs one such look, never a storage list.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....api import labels
from ....storage.interface import Storage
from ..plugins._index import PrefixIndex
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
    """The webhooks of every configuration under prefix, configurations in name order: a
    PrefixIndex of the configurations (plugins/_index.py), compiled again when one changes."""

    def __init__(self, storage: Storage, prefix: str) -> None:
        self.index = PrefixIndex(storage, prefix)
        self._generation: int | None = None      # the index's generation the webhooks were compiled at
        self._hooks: list[WebhookAccessor] = []

    def webhooks(self) -> list[WebhookAccessor] | None:
        """The current webhooks (read-only), or None when sync() must list first."""
        generation = self.index.poll()
        if generation is None:
            return None
        if generation != self._generation:
            self._compile(generation)
        return self._hooks

    async def sync(self) -> list[WebhookAccessor]:
        """List the configurations (and follow the store from there on); the current webhooks."""
        generation = await self.index.refresh()
        if generation != self._generation:
            self._compile(generation)
        return self._hooks

    def stop(self) -> None:
        self.index.stop()

    def _compile(self, generation: int) -> None:
        """Upstream: the configurations sorted by name, each one's webhooks in order."""
        hooks = []
        for cfg in sorted(self.index.polled(), key=lambda c: (c.get("metadata") or {}).get("name") or ""):
            cfg_name = (cfg.get("metadata") or {}).get("name") or ""
            for i, h in enumerate(cfg.get("webhooks") or ()):
                if isinstance(h, dict):
                    hooks.append(compile_webhook(cfg_name, i, h))
        self._hooks, self._generation = hooks, generation
