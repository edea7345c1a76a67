"""A labelled counter exposed under exactly its upstream name, `_total` or not.

Upstream's component-base counters are exposed as named: `endpoint_slice_controller_syncs`,
`endpoint_slice_controller_changes`, `volume_operation_total_errors`. prometheus_client's
Counter (and CounterMetricFamily, and generate_latest for any family of type "counter") always
appends `_total`, so these are kept as plain values and handed to the default REGISTRY by a
collector as a family whose TYPE line still says `counter` but whose name is left alone (the
`_Counter` type below compares unequal to "counter", which is what generate_latest tests
before it appends the suffix). prometheus_client's own parser reads the samples back as
`<name>_total`; Prometheus keeps the name.

Counts are plain dict updates (no lock: every controller runs on the event loop).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import REGISTRY, Metric
from prometheus_client.registry import Collector


class _Counter(str):
    """Writes as "counter" but is not == "counter", so generate_latest keeps the name."""

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


COUNTER = _Counter("counter")


class PlainCounterVec(Collector):
    """A counter vector: `inc(*label_values, n=1)`; registered in the default REGISTRY."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...] = (), *,
                 register: bool = True) -> None:
        self.name, self.documentation, self.labels = name, documentation, labels
        self.values: dict[tuple[str, ...], float] = {}
        if register:
            REGISTRY.register(self)

    def inc(self, *label_values: str, n: float = 1.0) -> None:
        self.values[label_values] = self.values.get(label_values, 0.0) + n

    def get(self, *label_values: str) -> float:
        return self.values.get(label_values, 0.0)

    def describe(self) -> list[Any]:
        return []            # collected lazily; nothing to check names against at registration

    def collect(self) -> Iterator[Metric]:
        m = Metric(self.name, self.documentation, "counter")
        m.type = COUNTER
        for values, v in list(self.values.items()):
            m.add_sample(self.name, dict(zip(self.labels, values)), v)
        yield m
