"""The cache mutation detector: off costs nothing, on names the modified object and its fields.

Upstream: client-go tools/cache/mutation_detector_test.go.
"""
from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from kubeplane.client.rest import ObjectList
from kubeplane.client.tools.cache import Indexer, SharedIndexInformer, mutation_detector
from kubeplane.client.tools.cache.mutation_detector import CacheMutationDetector
from kubeplane.utils.clock import FakeClock

from .fakes import FakeListerWatcher, cm, modified, settle


@pytest.fixture
def failures(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    found: list[str] = []
    monkeypatch.setattr(mutation_detector, "failure_func", found.append)
    return found


def test_off_there_is_no_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_CACHE_MUTATION_DETECTOR", "false")
    inf = SharedIndexInformer(FakeListerWatcher(), name="configmaps", clock=FakeClock())
    assert inf.mutation_detector is None and type(inf.indexer) is Indexer


async def test_an_informer_object_modified_in_place_is_named(monkeypatch: pytest.MonkeyPatch,
                                                              failures: list[str]) -> None:
    monkeypatch.setenv("KUBE_CACHE_MUTATION_DETECTOR", "true")
    lw = FakeListerWatcher(ObjectList([cm("a", "1", data={"k": "v"})], "5"))
    inf = SharedIndexInformer(lw, name="configmaps", clock=FakeClock())
    assert inf.handlers == []
    task = asyncio.ensure_future(inf.run())
    try:
        assert await settle(inf.has_synced)
        lw.push(modified(cm("b", "6", labels={"app": "web"})))
        assert await settle(lambda: inf.indexer.get_by_key("default/b") is not None)
        a, b = inf.indexer.get_by_key("default/a"), inf.indexer.get_by_key("default/b")
        copy = a.deep_copy()
        copy.data["k"] = "changed"                       # the right way: nothing to report
        assert inf.mutation_detector.altered() == []

        a.data["k"] = "changed"                          # the wrong way
        b.metadata.labels["tier"] = "front"
        assert sorted(inf.mutation_detector.altered()) == [
            'CACHE configmaps ALTERED: ConfigMap default/a (resourceVersion 1): .data.k: "v" -> "changed"',
            'CACHE configmaps ALTERED: ConfigMap default/b (resourceVersion 6): .metadata.labels.tier: null -> "front"',
        ]
        assert mutation_detector.check_all() != []       # what the suite's fixture sees as a test ends
    finally:
        a.data["k"], _ = "v", b.metadata.labels.pop("tier")  # restore, for the suite's own check
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert failures == []                                # restored before the shutdown check


async def test_run_compares_when_it_stops(failures: list[str]) -> None:
    det = CacheMutationDetector("pods", period=3600)
    obj = cm("a", "1", data={"k": "v"})
    det.add_object(obj)
    task = asyncio.ensure_future(det.run())
    await settle()
    assert failures == []                                # the first comparison found nothing
    obj.data["k"] = "x"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert len(failures) == 1 and failures[0].endswith("cache pods modified")
    obj.data["k"] = "v"
    mutation_detector.check_all()


def test_old_generations_are_forgotten() -> None:
    det = CacheMutationDetector("pods", retain=-1.0)     # every rotate() starts a generation
    obj = cm("a", "1")
    det.add_object(obj)
    det.add_object(obj)                                  # a resync hands the same object again
    det.add_object("not an API object")
    assert len(det.cached) == 1
    det.rotate()
    assert (len(det.cached), len(det.retained)) == (0, 1)
    det.rotate()
    assert (len(det.cached), len(det.retained)) == (0, 0)
    mutation_detector.check_all()


def test_a_process_with_a_modified_cache_exits_naming_the_object() -> None:
    """Upstream panics: outside the test suite a detected mutation ends the process."""
    code = textwrap.dedent("""
        from kubeplane.api.types import core_v1, meta_v1
        from kubeplane.client.tools.cache.mutation_detector import CacheMutationDetector
        det = CacheMutationDetector("pods")
        pod = core_v1.Pod(metadata=meta_v1.ObjectMeta(name="web", namespace="default"))
        det.add_object(pod)
        pod.metadata.name = "other"
        det.compare_objects()
        print("still running")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 70 and "still running" not in proc.stdout
    assert 'CACHE pods ALTERED: Pod default/other (resourceVersion ): .metadata.name: "web" -> "other"' in proc.stderr


def test_objects_put_into_the_store_by_hand_are_watched_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Controller tests fill listers through the indexer, as upstream's fixtures do."""
    monkeypatch.setenv("KUBE_CACHE_MUTATION_DETECTOR", "true")
    inf = SharedIndexInformer(FakeListerWatcher(), name="configmaps", clock=FakeClock())
    obj = cm("a", "1", data={"k": "v"})
    inf.get_indexer().add(obj)
    obj.data["k"] = "x"
    assert [m.split(": ", 1)[1] for m in inf.mutation_detector.altered()] == [
        'ConfigMap default/a (resourceVersion 1): .data.k: "v" -> "x"']
    obj.data["k"] = "v"
    mutation_detector.check_all()
