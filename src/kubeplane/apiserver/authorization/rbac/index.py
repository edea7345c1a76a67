"""Roles, ClusterRoles and their bindings, kept current from storage for the authorizer.

Upstream's RBAC authorizer reads informer listers. Here the index lists the four prefixes
once (`start`), then follows one storage watch per prefix: each `refresh()` (every request)
applies what the watches have ready. A store's watcher with `changes()` (memory, SQLite)
answers "nothing new" by looking at one armed future (its waiter()), so between RBAC writes a
refresh costs four `done()` checks and no scan of the log; any change bumps `generation`, which drops the
authorizer's decision cache and the derived subject index. A watcher without `changes()`
(etcd) is followed by a task, as an informer would be; a watch that fell out of the history
window is replaced by a relist in the background (decisions use the last state meanwhile, as
upstream's informers lag).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from ....serviceaccount.claims import make_username
from ....storage.interface import Compacted, Storage
from ....storage.watch_log import LogWatcher
from .rules import Rule, rules_of

log = logging.getLogger(__name__)

Obj = dict[str, Any]
ROLES, ROLE_BINDINGS = "/registry/roles/", "/registry/rolebindings/"
CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS = "/registry/clusterroles/", "/registry/clusterrolebindings/"
PREFIXES = (ROLES, ROLE_BINDINGS, CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS)


def principal(subject: Obj, namespace: str) -> tuple[str, str] | None:
    """The (kind, name) a subject grants to, as appliesToUser matches it: a ServiceAccount is
    its user name (its namespace defaulting to the binding's); None if it can match no one."""
    kind, name = subject.get("kind"), subject.get("name") or ""
    if kind == "User":
        return ("User", name)
    if kind == "Group":
        return ("Group", name)
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or namespace
        return ("User", make_username(ns, name)) if ns else None
    return None


class PolicyIndex:
    """objects: prefix -> storage key -> stored object (read-only)."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.objects: dict[str, dict[str, Obj]] = {p: {} for p in PREFIXES}
        self.generation = 0
        self.started = False
        self._watchers: list[Any] = []          # (prefix, watcher, is a LogWatcher)
        self._waits: tuple[asyncio.Future[Any], ...] = ()  # the LogWatchers' waiters: done once written
        self._polled = False                     # a watcher with changes() but no waiter to look at
        self._tasks: list[asyncio.Task[None]] = []
        self._relisting: asyncio.Task[None] | None = None
        self._derived: _Derived | None = None

    async def start(self) -> None:
        """List every prefix and follow it from there."""
        self.stop()
        objects: dict[str, dict[str, Obj]] = {}
        watchers = []
        for prefix in PREFIXES:
            kvs, rev = await self.storage.list(prefix)
            objects[prefix] = {kv.key: kv.obj for kv in kvs}
            watchers.append((prefix, self.storage.watch(prefix, rev)))
        self.objects = objects
        for prefix, w in watchers:
            if hasattr(w, "changes"):
                w.changes()                      # arm its waiter
                # a LogWatcher that is idle() has nothing new: no changes() call needed
                self._watchers.append((prefix, w, isinstance(w, LogWatcher)))
            else:
                self._tasks.append(asyncio.ensure_future(self._follow(prefix, w)))
        self.started = True
        self._arm()
        self._changed()

    def stop(self) -> None:
        for _, w, _ in self._watchers:
            w.stop()
        for t in self._tasks:
            t.cancel()
        self._watchers, self._tasks = [], []
        self._waits, self._polled = (), False

    def refresh(self) -> int:
        """Apply what the watches have ready; the generation. While nothing under the prefixes
        changed, this is four done() checks of the watchers' waiters (a write resolves its
        prefix's waiter at once; calling idle() on each instead cost four times as much)."""
        for fut in self._waits:
            if fut.done():
                break
        else:
            if not self._polled:
                return self.generation
        self._apply_changes()
        return self.generation

    def _apply_changes(self) -> None:
        try:
            for prefix, w, log_watcher in self._watchers:
                if log_watcher and w.idle():
                    continue
                events = w.changes()
                if events:
                    objs = self.objects[prefix]
                    for ev in events:
                        if ev.type == "DELETED":
                            objs.pop(ev.kv.key, None)
                        else:
                            objs[ev.kv.key] = ev.kv.obj
                    self._changed()
        except Compacted:
            self._relist()
        self._arm()

    def _arm(self) -> None:
        waits = [w.waiter() for _, w, log_watcher in self._watchers if log_watcher]
        self._waits = tuple(f for f in waits if f is not None)
        # a watcher with changes() but no waiter to look at: asked on every refresh
        self._polled = None in waits or any(not log_watcher for _, _, log_watcher in self._watchers)

    async def _follow(self, prefix: str, watcher: Any) -> None:
        try:
            async for ev in watcher:
                if ev.type == "DELETED":
                    self.objects[prefix].pop(ev.kv.key, None)
                else:
                    self.objects[prefix][ev.kv.key] = ev.kv.obj
                self._changed()
        except Compacted:
            self._relist()

    def _relist(self) -> None:
        if self._relisting is None or self._relisting.done():
            log.info("RBAC watch fell behind the storage history: listing again")
            self._relisting = asyncio.ensure_future(self.start())

    async def synced(self) -> None:
        """Wait until the index holds everything written so far: what the watches have ready
        applied, and a relist after a watch fell out of the history window finished (upstream's
        readiness waits for its informers' sync the same way). `up` waits for this before it
        serves: the policy it wrote after the first list (the admin's binding) then decides the
        first request, even when the history window turned over meanwhile."""
        while True:
            if self.started:
                self.refresh()
            relisting = self._relisting
            if relisting is None or relisting.done():
                return
            await relisting

    def _changed(self) -> None:
        self.generation += 1
        self._derived = None

    # --- look-ups (upstream: the RoleGetter, ClusterRoleGetter and binding listers) ---

    def role(self, namespace: str, name: str) -> Obj | None:
        return self.objects[ROLES].get(f"{ROLES}{namespace}/{name}")

    def cluster_role(self, name: str) -> Obj | None:
        return self.objects[CLUSTER_ROLES].get(CLUSTER_ROLES + name)

    def cluster_role_bindings(self) -> list[Obj]:
        return list(self.objects[CLUSTER_ROLE_BINDINGS].values())

    def role_bindings(self, namespace: str) -> list[Obj]:
        prefix = f"{ROLE_BINDINGS}{namespace}/"
        return [o for k, o in self.objects[ROLE_BINDINGS].items() if k.startswith(prefix)]

    def derived(self) -> _Derived:
        if self._derived is None:
            self._derived = _Derived(self)
        return self._derived


class _Derived:
    """What the resolver derives from the objects, rebuilt after any change: the bindings by
    the principals their subjects name (in name order: upstream's lister order is a map's, so
    any fixed order is as good), and each role's rules as Rule tuples."""

    def __init__(self, index: PolicyIndex) -> None:
        self.index = index
        self.cluster: dict[tuple[str, str], list[Obj]] = {}
        self.namespaced: dict[str, dict[tuple[str, str], list[Obj]]] = {}
        for key in sorted(index.objects[CLUSTER_ROLE_BINDINGS]):
            b = index.objects[CLUSTER_ROLE_BINDINGS][key]
            self._add(self.cluster, b, "")
        for key in sorted(index.objects[ROLE_BINDINGS]):
            b = index.objects[ROLE_BINDINGS][key]
            ns = (b.get("metadata") or {}).get("namespace") or ""
            self._add(self.namespaced.setdefault(ns, {}), b, ns)
        self._rules: dict[tuple[str, str, str], tuple[Rule, ...] | None] = {}

    @staticmethod
    def _add(by_principal: dict[tuple[str, str], list[Obj]], b: Obj, ns: str) -> None:
        seen = set()
        subjects = b.get("subjects")
        for s in subjects if isinstance(subjects, list) else ():
            p = principal(s, ns) if isinstance(s, dict) else None
            if p is not None and p not in seen:
                seen.add(p)
                by_principal.setdefault(p, []).append(b)

    def bindings_for(self, by_principal: dict[tuple[str, str], list[Obj]], name: str,
                     groups: tuple[str, ...]) -> list[Obj]:
        """The bindings with a subject naming the user or one of its groups, in name order."""
        found = list(by_principal.get(("User", name), ()))
        for g in groups:
            found += by_principal.get(("Group", g), ())
        if len(found) > 1:
            unique = {id(b): b for b in found}
            found = sorted(unique.values(), key=lambda b: b["metadata"]["name"])
        return found

    def rules(self, kind: str, namespace: str, name: str) -> tuple[Rule, ...] | None:
        key = (kind, namespace, name)
        if key not in self._rules:
            role = self.index.role(namespace, name) if kind == "Role" else self.index.cluster_role(name)
            self._rules[key] = rules_of(role) if role is not None else None
        return self._rules[key]
