"""The scheduling framework's vocabulary: Status, CycleState and the extension-point Protocols.

Upstream: pkg/scheduler/framework/interface.go (and k8s.io/kube-scheduler/framework). A plugin
is any object with a NAME and the methods of the extension points it implements; the runtime
(runtime.py) finds them with isinstance checks against these runtime-checkable Protocols.

Conventions kept from upstream: a *None* status means Success (so the hot path allocates
nothing); a Status carries a code, reasons (shown in FitError histograms) and the plugin that
failed. Scores are ints in [0, MAX_NODE_SCORE] after normalization.
"""
from __future__ import annotations

import enum
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ...api.types.core_v1 import Pod
    from .types import NodeInfo

MAX_NODE_SCORE = 100          # Upstream: framework.MaxNodeScore
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


class Code(enum.IntEnum):
    """Upstream: framework.Code."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3   # preemption cannot help on this node
    WAIT = 4
    SKIP = 5                             # PreFilter/PreScore: this plugin has nothing to do for the pod
    PENDING = 6


class Status:
    """The result of running a plugin: a code, human-readable reasons and the failing plugin.

    Upstream: framework.Status
    """

    __slots__ = ("code", "reasons", "plugin", "err")

    def __init__(self, code: Code, *reasons: str, plugin: str = "", err: BaseException | None = None) -> None:
        self.code = code
        self.reasons: list[str] = list(reasons)
        self.plugin = plugin
        self.err = err

    @classmethod
    def as_status(cls, err: BaseException) -> Status:
        """Upstream: AsStatus: an internal error."""
        return cls(Code.ERROR, str(err), err=err)

    def message(self) -> str:
        """The reasons joined by ", ". Upstream: Status.Message"""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending. Upstream: Status.IsRejected"""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (self.code, self.reasons) == (other.code, other.reasons)

    def __repr__(self) -> str:
        return f"Status({self.code.name}, {self.reasons!r}, plugin={self.plugin!r})"


def is_success(status: Status | None) -> bool:
    """None or a Success status (upstream's nil-safe IsSuccess)."""
    return status is None or status.code == Code.SUCCESS


class CycleState:
    """Per-scheduling-cycle scratch space that plugins write in PreFilter/PreScore and read later.

    Upstream: framework.CycleState
    """

    __slots__ = ("storage", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self.storage: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self.storage[key] = value

    def read(self, key: str) -> Any:
        """The value under key; KeyError if no plugin wrote it (upstream: ErrNotFound)."""
        return self.storage[key]


def node_column(state: CycleState, nodes: list[Any], attr: str) -> list[Any]:
    """[getattr(ni, attr) for ni in nodes], made once per cycle for the same list of nodes
    (the filters' slice, then the scorers' feasible list, are usually one list object).

    Ours: the C-level filters and scorers each need the nodes' generations and names.
    """
    key = "NodeColumn:" + attr
    memo = state.storage.get(key)
    if memo is not None and memo[0] is nodes and len(memo[1]) == len(nodes):
        return memo[1]
    column = list(map(operator.attrgetter(attr), nodes))
    state.storage[key] = (nodes, column)
    return column


@dataclass
class PreFilterResult:
    """Nodes a PreFilter plugin restricts the pod to; None node_names means all nodes.

    Upstream: framework.PreFilterResult
    """

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        """The intersection of two results. Upstream: PreFilterResult.Merge"""
        if other is None or other.all_nodes():
            return self
        if self.all_nodes():
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass
class PostFilterResult:
    nominated_node_name: str = ""


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int = 0


class NodePluginScores:
    """A node's per-plugin weighted scores and their total. Upstream: framework.NodePluginScores

    NodePluginScores(name, scores=[(plugin, weighted score), ...], total_score=...). The
    runtime makes one per feasible node per cycle and only total_score picks the host, so
    it hands over the plugin names, its per-plugin score columns and the node's index, and
    `scores` pairs them up on first read.
    """

    __slots__ = ("name", "total_score", "_scores", "_plugins", "_columns", "_index")

    def __init__(self, name: str, scores: list[tuple[str, int]] | None = None, total_score: int = 0) -> None:
        self.name = name
        self.total_score = total_score
        self._scores = [] if scores is None else scores

    @classmethod
    def from_columns(cls, name: str, total_score: int, plugins: tuple[str, ...], columns: list[list[int]],
                     index: int) -> NodePluginScores:
        """scores == [(plugins[k], columns[k][index]) for each k], paired lazily."""
        ns = cls.__new__(cls)
        ns.name = name
        ns.total_score = total_score
        ns._scores = None
        ns._plugins = plugins
        ns._columns = columns
        ns._index = index
        return ns

    @property
    def scores(self) -> list[tuple[str, int]]:
        if self._scores is None:
            i = self._index
            self._scores = [(p, col[i]) for p, col in zip(self._plugins, self._columns)]
        return self._scores

    @scores.setter
    def scores(self, value: list[tuple[str, int]]) -> None:
        self._scores = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodePluginScores):
            return NotImplemented
        return (self.name, self.scores, self.total_score) == (other.name, other.scores, other.total_score)

    def __repr__(self) -> str:
        return f"NodePluginScores(name={self.name!r}, scores={self.scores!r}, total_score={self.total_score!r})"


class NodeToStatus:
    """Filter results of the nodes that failed, plus the status of nodes never looked at.

    Nodes absent from the map (not evaluated, or rejected wholesale by PreFilter) get
    absent_nodes_status. Upstream: framework.NodeToStatus
    """

    def __init__(self, statuses: dict[str, Status] | None = None,
                 absent_nodes_status: Status | None = None) -> None:
        self.statuses: dict[str, Status] = statuses if statuses is not None else {}
        self.absent_nodes_status = absent_nodes_status or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def get(self, node_name: str) -> Status:
        return self.statuses.get(node_name, self.absent_nodes_status)

    def set(self, node_name: str, status: Status) -> None:
        self.statuses[node_name] = status

    def __len__(self) -> int:
        return len(self.statuses)

    def nodes_for_status_code(self, node_names: list[str], code: Code) -> list[str]:
        """Names, among node_names, whose status has code. Upstream: NodeToStatus.NodesForStatusCode"""
        return [n for n in node_names if self.get(n).code == code]


# --- extension points ---------------------------------------------------------------------

@runtime_checkable
class Plugin(Protocol):
    NAME: str


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: Any, b: Any) -> bool:
        """Whether QueuedPodInfo a should be popped before b."""


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Precompute per-pod state; Skip disables this plugin's Filter for the cycle, a
        rejection makes the pod unschedulable on every node."""


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """None if the pod may run on the node, else a rejecting Status with reasons."""


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(self, state: CycleState, pod: Pod,
                    m: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        """Called only when no node fits; may make room (preemption) and says why it could not."""


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """Precompute scoring state over the feasible nodes; Skip disables this plugin's Score."""


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """A raw score for the node (normalized later if the plugin has normalize_score)."""


@runtime_checkable
class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """Rescale the raw scores in place to [0, MAX_NODE_SCORE]."""


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Prepare the node for the pod before it is bound (volumes); a failure aborts the binding."""


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind the pod to the node; a Skip status passes to the next bind plugin."""
