"""The framework runtime: one profile's plugins, run extension point by extension point.

Upstream: pkg/scheduler/framework/runtime/framework.go (frameworkImpl). Each plugin object
is registered once and sorted into the extension points it implements; Score plugins get
their profile weight. The Framework is also the plugins' Handle (snapshot, clientset).
"""
from __future__ import annotations

import functools
import logging
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ...api.types.core_v1 import Pod
from .interface import (
    MAX_NODE_SCORE, MIN_NODE_SCORE, BindPlugin, Code, CycleState, FilterPlugin, NodePluginScores, NodeScore,
    NodeToStatus, PostFilterPlugin, PostFilterResult, PreBindPlugin, PreFilterPlugin, PreFilterResult, PreScorePlugin,
    QueueSortPlugin, ScorePlugin, Status, node_column,
)
from .types import NodeInfo

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass(frozen=True)
class PluginSpec:
    """A plugin factory (called with the Handle) and its score weight (0: no Score)."""

    factory: Callable[[Any], Any]
    weight: int = 0


class Framework:
    """Upstream: frameworkImpl; also implements framework.Handle for plugins."""

    def __init__(self, specs: Iterable[PluginSpec | tuple[Callable[[Any], Any], int]], *, clientset: Any = None,
                 snapshot: Any = None, queue_sort: QueueSortPlugin | None = None,
                 profile_name: str = DEFAULT_SCHEDULER_NAME, percentage_of_nodes_to_score: int | None = None) -> None:
        from .plugins.queuesort import PrioritySort
        self.profile_name = profile_name
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self._clientset = clientset
        self.snapshot = snapshot
        self.queue_sort_plugin = queue_sort or PrioritySort()
        self.plugins: list[Any] = []
        self.score_weights: dict[str, int] = {}
        for spec in specs:
            factory, weight = (spec.factory, spec.weight) if isinstance(spec, PluginSpec) else spec
            plugin = factory(self)
            self.plugins.append(plugin)
            if weight and isinstance(plugin, ScorePlugin):
                self.score_weights[plugin.NAME] = weight
        self.pre_filter_plugins = [p for p in self.plugins if isinstance(p, PreFilterPlugin)]
        self.filter_plugins = [p for p in self.plugins if isinstance(p, FilterPlugin)]
        self.post_filter_plugins = [p for p in self.plugins if isinstance(p, PostFilterPlugin)]
        self.pre_score_plugins = [p for p in self.plugins if isinstance(p, PreScorePlugin)
                                  and p.NAME in self.score_weights]
        self.score_plugins = [p for p in self.plugins if isinstance(p, ScorePlugin) and p.NAME in self.score_weights]
        self.bind_plugins = [p for p in self.plugins if isinstance(p, BindPlugin)]
        self.pre_bind_plugins = [p for p in self.plugins if isinstance(p, PreBindPlugin)]
        self.informer_factory: Any = None       # set by the scheduler for plugins that read listers
        self.plugin_informers: list[Any] = []   # what set_informer_factory's plugins read: synced before scheduling

    def set_informer_factory(self, factory: Any) -> None:
        """Give plugins that read listers (set_listers) the factory, before it starts.

        Upstream: frameworkImpl's WithInformerFactory, read by the plugins' New
        """
        self.informer_factory = factory
        for pl in self.plugins:
            set_listers = getattr(pl, "set_listers", None)
            if set_listers is not None:
                self.plugin_informers.extend(set_listers(factory) or ())

    # --- Handle ----------------------------------------------------------------------------

    def snapshot_shared_lister(self) -> Any:
        return self.snapshot

    def client_set(self) -> Any:
        return self._clientset

    def queue_sort_func(self) -> Callable[[Any, Any], bool]:
        return self.queue_sort_plugin.less

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    # --- extension points ------------------------------------------------------------------

    def run_pre_filter_plugins(self, state: CycleState, pod: Pod,
                               nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Run every PreFilter; Skip marks the plugin's Filter as skipped, the results
        intersect, the first rejection (or error) stops the run.

        Upstream: frameworkImpl.RunPreFilterPlugins
        """
        result: PreFilterResult | None = None
        plugins_with_results: list[str] = []
        for pl in self.pre_filter_plugins:
            r, status = pl.pre_filter(state, pod, nodes)
            if status is not None and status.code == Code.SKIP:
                state.skip_filter_plugins.add(pl.NAME)
                continue
            if status is not None and status.code != Code.SUCCESS:
                status.plugin = pl.NAME
                if status.code == Code.ERROR:
                    status.reasons = [f"running PreFilter plugin {pl.NAME!r}: {status.message()}"]
                return None, status
            if r is not None and not r.all_nodes():
                plugins_with_results.append(pl.NAME)
                result = r if result is None else result.merge(r)
                if not result.node_names:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(plugins_with_results)}] simultaneously"
                    if len(plugins_with_results) == 1:
                        msg = f"node(s) didn't satisfy plugin {plugins_with_results[0]}"
                    return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg, plugin=pl.NAME)
        return result, None

    def filter_plugins_to_run(self, state: CycleState) -> list[tuple[str, Callable[..., Status | None]]]:
        """(name, bound Filter) of the plugins whose PreFilter did not Skip, in profile order.

        Resolved once per cycle so the per-node loop makes no attribute lookups or set tests.
        """
        skip = state.skip_filter_plugins
        return [(pl.NAME, pl.filter) for pl in self.filter_plugins if not skip or pl.NAME not in skip]

    def filter_nodes_to_run(self, state: CycleState, filters: list[tuple[str, Callable[..., Status | None]]],
                            ) -> list[Callable[..., list[bool] | None]] | None:
        """Each filter's filter_nodes (state, pod, nodes -> per node: passes for sure), when
        every filter to run has one; None otherwise (and without filters).

        Ours: a plugin's filter_nodes answers for a slice of nodes at once what Filter would
        pass (False: ask Filter), so the feasibility loop makes no call per node.
        """
        if not filters:
            return None
        out = []
        for _, run in filters:
            filter_nodes = getattr(getattr(run, "__self__", None), "filter_nodes", None)
            if filter_nodes is None:
                return None
            out.append(filter_nodes)
        return out

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo,
                           filters: list[tuple[str, Callable[..., Status | None]]] | None = None) -> Status | None:
        """The first failing Filter's status (named after its plugin), None if all pass.

        filters: filter_plugins_to_run(state), when the caller runs many nodes.
        Upstream: frameworkImpl.RunFilterPlugins
        """
        for name, run in filters if filters is not None else self.filter_plugins_to_run(state):
            status = run(state, pod, node_info)
            if status is not None and status.code:      # Code.SUCCESS is 0
                status.plugin = name
                return status
        return None

    def run_post_filter_plugins(self, state: CycleState, pod: Pod,
                                m: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        """The first PostFilter that succeeds wins; otherwise the rejections' messages.

        Upstream: frameworkImpl.RunPostFilterPlugins
        """
        reasons: list[str] = []
        result: PostFilterResult | None = None
        for pl in self.post_filter_plugins:
            r, status = pl.post_filter(state, pod, m)
            if status.is_success():
                return r, status
            if status.code == Code.ERROR:
                return None, status
            reasons.extend(status.reasons)
            if r is not None:
                result = r
        return result, Status(Code.UNSCHEDULABLE, *reasons)

    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """Upstream: frameworkImpl.RunPreScorePlugins"""
        for pl in self.pre_score_plugins:
            status = pl.pre_score(state, pod, nodes)
            if status is not None and status.code == Code.SKIP:
                state.skip_score_plugins.add(pl.NAME)
            elif status is not None and status.code != Code.SUCCESS:
                return Status(Code.ERROR, f"running PreScore plugin {pl.NAME!r}: {status.message()}", plugin=pl.NAME)
        return None

    def run_score_plugins(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[NodePluginScores]:
        """Score every node with every non-skipped plugin, normalize, apply weights, total.

        Example: TaintToleration (weight 3) normalizes to 100 and NodeResourcesFit
        (weight 1) scores 75: total 3*100 + 1*75 = 375.
        Works a plugin at a time on plain int lists: NodeScore objects are built only for
        plugins that normalize (their ScoreExtensions take a NodeScoreList).
        Upstream: frameworkImpl.RunScorePlugins
        """
        plugins, columns, totals = self._score_columns(state, pod, nodes)
        names = [ni.name for ni in nodes]
        if not columns:
            return [NodePluginScores(n) for n in names]
        from_columns = NodePluginScores.from_columns
        return [from_columns(n, t, plugins, columns, i) for i, (n, t) in enumerate(zip(names, totals))]

    def run_score_plugins_totals(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[int]:
        """Each node's total_score of run_score_plugins, without a NodePluginScores per node
        (what picking the host needs)."""
        return self._score_columns(state, pod, nodes)[2]

    def _score_columns(self, state: CycleState, pod: Pod,
                       nodes: list[NodeInfo]) -> tuple[tuple[str, ...], list[list[int]], list[int]]:
        """(plugins run, their weighted score columns, per-node totals) in node order."""
        skip = state.skip_score_plugins
        to_run = [pl for pl in self.score_plugins if pl.NAME not in skip]
        names = node_column(state, nodes, "name")
        columns = [self._weighted_scores(pl, state, pod, nodes, names) for pl in to_run]   # per plugin, per node
        if not columns:
            return (), [], [0] * len(nodes)
        totals = columns[0]
        for col in columns[1:]:
            totals = list(map(operator.add, totals, col))
        return tuple(pl.NAME for pl in to_run), columns, totals

    def _weighted_scores(self, pl: ScorePlugin, state: CycleState, pod: Pod, nodes: list[NodeInfo],
                         names: list[str]) -> list[int]:
        """One plugin's scores of nodes: normalized (if it normalizes), range-checked, weighted.

        A plugin may score (score_nodes) and normalize (normalize_scores) a whole list at
        once, with the same results as Score per node and NormalizeScore (ours: one call per
        node less, no NodeScore objects; upstream's plugins have no such methods).
        """
        score_nodes = getattr(pl, "score_nodes", None)
        if score_nodes is not None:
            raw = score_nodes(state, pod, nodes)
        else:
            score = pl.score
            raw = [score(state, pod, ni) for ni in nodes]
        normalize = getattr(pl, "normalize_score", None)
        normalize_scores = getattr(pl, "normalize_scores", None)
        if normalize_scores is not None:
            raw = normalize_scores(state, pod, names, raw)
        elif normalize is not None:
            node_scores = [NodeScore(n, x) for n, x in zip(names, raw)]
            status = normalize(state, pod, node_scores)
            if status is not None and not status.is_success():
                raise RuntimeError(f"running Normalize on Score plugins: {status.message()}")
            raw = [ns.score for ns in node_scores]
        if raw and not (MIN_NODE_SCORE <= min(raw) and max(raw) <= MAX_NODE_SCORE):
            bad = next(x for x in raw if not MIN_NODE_SCORE <= x <= MAX_NODE_SCORE)
            raise RuntimeError(f"plugin {pl.NAME!r} returns an invalid score {bad}, it should in the "
                               f"range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
        weight = self.score_weights[pl.NAME]
        if weight == 1:
            return raw
        # Scores are in [0, 100] here: weighting is a lookup, done at C level by map.
        return list(map(_weighted_table(weight).__getitem__, raw))

    async def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """The first failing PreBind aborts the binding. Upstream: frameworkImpl.RunPreBindPlugins"""
        for pl in self.pre_bind_plugins:
            status = await pl.pre_bind(state, pod, node_name)
            if status is not None and not status.is_success():
                return Status(Code.ERROR, f"running PreBind plugin {pl.NAME!r}: {status.message()}",
                              plugin=pl.NAME, err=status.err)
        return None

    async def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """The first bind plugin that does not Skip binds. Upstream: frameworkImpl.RunBindPlugins"""
        if not self.bind_plugins:
            return Status(Code.SKIP)
        status: Status | None = None
        for pl in self.bind_plugins:
            status = await pl.bind(state, pod, node_name)
            if status is not None and status.code == Code.SKIP:
                continue
            if status is not None and status.code != Code.SUCCESS:
                return Status(Code.ERROR, f"running Bind plugin {pl.NAME!r}: {status.message()}",
                              plugin=pl.NAME, err=status.err)
            return status
        return status


@functools.lru_cache(maxsize=32)
def _weighted_table(weight: int) -> list[int]:
    """[score * weight for every score in [MIN_NODE_SCORE, MAX_NODE_SCORE]] (MIN is 0)."""
    return [x * weight for x in range(MAX_NODE_SCORE + 1)]


def default_framework(*, clientset: Any = None, snapshot: Any = None,
                      percentage_of_nodes_to_score: int | None = None) -> Framework:
    """The default-scheduler profile (upstream's default plugins and weights)."""
    from .plugins import DEFAULT_PLUGINS
    return Framework([PluginSpec(cls, w) for cls, w in DEFAULT_PLUGINS], clientset=clientset, snapshot=snapshot,
                     percentage_of_nodes_to_score=percentage_of_nodes_to_score)
