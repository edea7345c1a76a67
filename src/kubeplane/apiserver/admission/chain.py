"""The admission chain: every enabled plugin, in upstream's order, on every write.

Upstream: chainAdmissionHandler (staging/src/k8s.io/apiserver/pkg/admission/chain.go) and the
order of AllOrderedPlugins (pkg/kubeapiserver/options/plugins.go). The request pipeline runs
admit() (mutating plugins, in order) after defaulting and before validation, and validate()
(validating plugins, in order) after validation and before the write — for create, update
(patch and apply included), delete and subresource writes alike.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from typing import TYPE_CHECKING, cast

from ...storage.interface import Compacted
from ...storage.watch_log import LogWatcher
from .fused import PodCreate, pod_create
from .interface import CREATE, Attributes, Operation, Plugin

if TYPE_CHECKING:
    from ..server import APIServer

# Upstream's AllOrderedPlugins, restricted to the plugins enabled by default (and
# kubeplane's names for them). A plugin module registers its class under its NAME in PLUGINS;
# the chain keeps this order whatever the registration order.
ORDER = (
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
)

# Upstream enables these by default, but they need a controller kubeplane does not run yet: a
# StorageObjectInUseProtection finalizer is only removed by the pv/pvc-protection controllers
# (issue 14), so every PV and PVC delete would hang. Off until those controllers exist.
DEFAULT_OFF = frozenset({"StorageObjectInUseProtection"})

PLUGINS: dict[str, type[Plugin]] = {}


def register(cls: type[Plugin]) -> type[Plugin]:
    """Class decorator: make a plugin known to the chain under cls.NAME."""
    assert cls.NAME in ORDER, f"admission plugin {cls.NAME!r} is not in ORDER"
    PLUGINS[cls.NAME] = cls
    return cls


class Chain:
    """The enabled plugins, split into the mutating and the validating phase.

    Plugins driven by objects users write (webhooks, policies: Plugin.CONFIG_PREFIX) usually
    have nothing configured, yet each would still be asked on every write (~1 µs each). While
    such a plugin says it is dormant(), the chain leaves it out of its routes; one storage
    watcher per configurations' prefix says whether anything was written there since (the
    future its changes() armed is done; no look at the log), and only then are the plugins
    asked again. So a
    configuration written just before a request applies to it, as when every plugin is asked.
    """

    def __init__(self, api: APIServer, enabled: tuple[str, ...] | None = None) -> None:
        from . import plugins, webhook  # noqa: F401  (registers the shipped plugins and the webhook plugins)
        self.api = api
        self._sleepers: list[Plugin] = []        # the plugins with a CONFIG_PREFIX
        self._dormant: frozenset[Plugin] = frozenset()
        self._config_watchers: list[LogWatcher] = []
        self._config_waiters: list[asyncio.Future[int | None] | None] = []     # theirs, as armed
        self._unsettled = True                   # a sleeper could not tell: ask again next time
        disabled = api.options.disable_admission_plugins
        if enabled is None:
            enabled = tuple(n for n in ORDER if n not in DEFAULT_OFF)
        names = [n for n in ORDER if n in PLUGINS and n in enabled and n not in disabled]
        self.plugins: list[Plugin] = []
        self._admitters: dict[Operation, list[Plugin]] = {op: [] for op in Operation}
        self._validators: dict[Operation, list[Plugin]] = {op: [] for op in Operation}
        # (operation, group, resource, subresource) -> its (admitters, validators): the plugins
        # that act on it
        self._routes: dict[tuple[Operation, str, str, str], tuple[list[Plugin], list[Plugin]]] = {}
        # The route of a pod create when it is the default plugins', and its fused phases
        # (fused.py): asked in one call per phase instead of one per plugin.
        self._fused_route: tuple[list[Plugin], list[Plugin]] | None = None
        self._fused: PodCreate | None = None
        self.fuse = True                         # False: every route asks each plugin (tests compare)
        for n in names:
            self.append(PLUGINS[n](api))

    def append(self, p: Plugin) -> None:
        """Add p at the end of the chain (the shipped plugins come in ORDER; tests add their own).
        Which operations a plugin handles is read once, here: every write asks the chain."""
        self.plugins.append(p)
        self._routes.clear()
        if p.CONFIG_PREFIX:
            self._sleepers.append(p)
            self._stop_config_watchers()
        for op in Operation:
            if p.handles(op):
                if p.MUTATING:
                    self._admitters[op].append(p)
                if p.VALIDATING:
                    self._validators[op].append(p)

    async def close(self) -> None:
        """Release what plugins hold open (the webhook plugins' HTTP connections)."""
        self._stop_config_watchers()
        for p in self.plugins:
            await p.close()

    def admit(self, a: Attributes) -> Awaitable[None]:
        """The mutating phase (await it). Upstream: chainAdmissionHandler.Admit.

        Each plugin is asked to decide without waiting first (Plugin.admit_now); a coroutine
        is made only from the first one that cannot."""
        route = a.route = self._route(a)
        plugins = route[0]
        if route is self._fused_route:      # a pod create through the default plugins
            done = self._fused.admit(a)     # type: ignore[union-attr]
            if done == PodCreate.ADMITTERS:
                return _NOTHING
            plugins = plugins[done:]        # the plugins' own code from the first not done
        for p in plugins:                   # (no enumerate: its tuple per plugin, on every write)
            if not p.admit_now(a):
                if p is plugins[-1]:        # no coroutine of ours around the plugin's (the webhooks' DONE)
                    return p.admit(a)
                return _admit(plugins, plugins.index(p), a)
        return _NOTHING

    def admitters(self, a: Attributes) -> list[Plugin]:
        """The mutating plugins for a, in chain order (the webhook plugin re-runs those before
        it when a webhook changed the object: upstream's reinvoker)."""
        return self._route(a)[0]

    def validate(self, a: Attributes) -> Awaitable[None]:
        """The validating phase (await it), as admit(). Upstream: chainAdmissionHandler.Validate.

        After admit(a), with the plugins admit found: whether a sleeper woke is asked once per
        request (~2k instructions), as upstream's plugins read their configurations from an
        informer's cache once per call, not at each phase."""
        route = a.route or self._route(a)
        plugins = route[1]
        if route is self._fused_route:
            done = self._fused.validate(a)  # type: ignore[union-attr]
            if done == PodCreate.VALIDATORS:
                return _NOTHING
            plugins = plugins[done:]
        for p in plugins:
            if not p.validate_now(a):
                if p is plugins[-1]:
                    return p.validate(a)
                return _validate(plugins, plugins.index(p), a)
        return _NOTHING

    def _route(self, a: Attributes) -> tuple[list[Plugin], list[Plugin]]:
        """The plugins for a's operation, resource and subresource, in chain order (worked out
        once for each: a pod create calls 9 plugins of 13, a binding 2)."""
        if self._sleepers:
            for f in self._config_waiters:           # (a loop, not any(): no generator per write)
                if f is None or f.done():
                    self._check_dormant()
                    break
            else:
                if self._unsettled or not self._config_waiters:
                    self._check_dormant()
        key = (a.operation, a.group, a.resource, a.subresource)
        route = self._routes.get(key)
        if route is None:
            g, r, sub = a.group, a.resource, a.subresource
            dormant = self._dormant
            route = self._routes[key] = (
                [p for p in self._admitters[a.operation] if p not in dormant and p.admits_on(g, r, sub)],
                [p for p in self._validators[a.operation] if p not in dormant and p.validates_on(g, r, sub)])
            if key == _POD_CREATE:
                fused = pod_create(*route) if self.fuse else None
                self._fused_route, self._fused = (route if fused is not None else None), fused
        return route

    def _check_dormant(self) -> None:
        """Ask the sleepers again (something was written under their prefixes, or one could
        not tell last time) and follow the prefixes from now on."""
        try:
            for w in self._config_watchers:
                w.changes()                          # consume, and arm its waiter again
        except Compacted:
            self._stop_config_watchers()
        if not self._config_watchers and not self._watch_configs():
            self._sleepers, self._unsettled = [], False     # a store whose watchers cannot say idle()
            self._set_dormant(frozenset())
            return
        self._config_waiters = [w.waiter() for w in self._config_watchers]
        answers = [(p, p.dormant()) for p in self._sleepers]
        self._unsettled = any(d is None for _, d in answers)
        self._set_dormant(frozenset(p for p, d in answers if d))

    def _watch_configs(self) -> bool:
        """Follow each sleeper's prefix from the store's current revision."""
        storage = self.api.storage
        for prefix in sorted({q for p in self._sleepers for q in (p.CONFIG_PREFIXES or (p.CONFIG_PREFIX,))}):
            w = storage.watch(prefix, storage.revision)
            if not isinstance(w, LogWatcher):
                w.stop()
                self._stop_config_watchers()
                return False
            w.changes()                              # arm its waiter: idle() until a write
            self._config_watchers.append(w)
        return True

    def _stop_config_watchers(self) -> None:
        for w in self._config_watchers:
            w.stop()
        self._config_watchers, self._config_waiters = [], []
        self._unsettled = True

    def _set_dormant(self, dormant: frozenset[Plugin]) -> None:
        if dormant != self._dormant:
            self._dormant = dormant
            self._routes.clear()


async def _admit(plugins: list[Plugin], start: int, a: Attributes) -> None:
    """plugins[start] awaited, then the rest, each without waiting where it can."""
    await plugins[start].admit(a)
    for p in plugins[start + 1:]:
        if not p.admit_now(a):
            await p.admit(a)


async def _validate(plugins: list[Plugin], start: int, a: Attributes) -> None:
    await plugins[start].validate(a)
    for p in plugins[start + 1:]:
        if not p.validate_now(a):
            await p.validate(a)


_POD_CREATE = (CREATE, "", "pods", "")


class _Nothing:
    """An awaitable that is done at once: a phase without plugins costs no coroutine (every
    write awaits both phases)."""

    def __await__(self) -> Iterator[None]:
        return iter(())


_NOTHING = cast(Awaitable[None], _Nothing())
