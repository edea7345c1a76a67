"""Indexer (store + indices) and the key codec.

Reproduces client-go's store_test.go, index_test.go and thread_safe_store_test.go, plus a
Hypothesis state machine that checks the index invariant after every operation.
"""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kubeplane.api.types import core_v1, meta_v1
from kubeplane.client.tools.cache import (
    NAMESPACE_INDEX, DeletedFinalStateUnknown, Indexer, meta_namespace_index_func, meta_namespace_key_func,
    split_meta_namespace_key,
)


def pod(name: str, ns: str = "", *, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, rv: str = "") -> core_v1.Pod:
    return core_v1.Pod(metadata=meta_v1.ObjectMeta(name=name, namespace=ns or None, labels=labels,
                                                   annotations=annotations, resource_version=rv or None))


def by_foo(obj: Any) -> list[str]:
    """index_test.go testIndexFunc: index pods by their "foo" label."""
    return [(obj.metadata.labels or {}).get("foo", "")]


def by_users(obj: Any) -> list[str]:
    """index_test.go testUsersIndexFunc: one pod, several index values."""
    return (obj.metadata.annotations or {}).get("users", "").split(",")


def names(objs: list[Any]) -> set[str]:
    return {o.metadata.name for o in objs}


def new_indexer() -> Indexer:
    return Indexer(meta_namespace_key_func, {NAMESPACE_INDEX: meta_namespace_index_func, "byUser": by_users})


# --- keys ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("obj, key", [
    pytest.param(pod("web", "default"), "default/web", id="namespaced"),
    pytest.param(pod("node-1"), "node-1", id="cluster-scoped"),
    pytest.param(DeletedFinalStateUnknown("ns/gone", pod("gone", "ns")), "ns/gone", id="tombstone-key"),
    pytest.param(DeletedFinalStateUnknown("ns/k", None), "ns/k", id="tombstone-without-object"),
    pytest.param("ns/explicit", "ns/explicit", id="explicit-key"),
])
def test_meta_namespace_key_func(obj: Any, key: str) -> None:
    assert meta_namespace_key_func(obj) == key


@pytest.mark.parametrize("key, expected", [
    ("ns/name", ("ns", "name")),
    ("name", ("", "name")),
    ("/name", ("", "name")),
    ("ns/", ("ns", "")),
    ("", ("", "")),
])
def test_split_meta_namespace_key(key: str, expected: tuple[str, str]) -> None:
    assert split_meta_namespace_key(key) == expected


def test_split_meta_namespace_key_rejects_two_slashes() -> None:
    with pytest.raises(ValueError, match="unexpected key format"):
        split_meta_namespace_key("a/b/c")


def test_key_round_trip() -> None:
    for obj in (pod("web", "default"), pod("node-1")):
        ns, name = split_meta_namespace_key(meta_namespace_key_func(obj))
        assert (ns or None, name) == (obj.metadata.namespace, obj.metadata.name)


# --- store (store_test.go doTestStore / doTestIndex) ---------------------------------------------


def test_store_add_update_get_delete() -> None:
    store = new_indexer()
    store.add(pod("foo", "ns", rv="1"))
    assert store.get_by_key("ns/foo").metadata.resource_version == "1"
    assert store.get(pod("foo", "ns")).metadata.resource_version == "1"

    store.update(pod("foo", "ns", rv="2"))
    assert store.get_by_key("ns/foo").metadata.resource_version == "2"
    assert len(store) == 1

    store.delete(pod("foo", "ns"))
    assert store.get_by_key("ns/foo") is None
    assert store.get(pod("foo", "ns")) is None
    store.delete(pod("foo", "ns"))              # deleting a missing key is fine
    store._check_invariants()


def test_store_list_and_list_keys() -> None:
    store = new_indexer()
    for name in ("a", "b", "c"):
        store.add(pod(name, "ns"))
    store.add(pod("cluster"))
    assert names(store.list()) == {"a", "b", "c", "cluster"}
    assert sorted(store.list_keys()) == ["cluster", "ns/a", "ns/b", "ns/c"]


def test_store_replace_drops_everything_not_listed() -> None:
    store = new_indexer()
    store.add(pod("foo", "ns", annotations={"users": "ernie"}))
    store.add(pod("bar", "ns"))
    store.replace([pod("foo", "ns", rv="5", annotations={"users": "bert"}), pod("baz", "other")], "5")
    assert sorted(store.list_keys()) == ["ns/foo", "other/baz"]
    assert store.by_index("byUser", "ernie") == []
    assert names(store.by_index("byUser", "bert")) == {"foo"}
    assert names(store.by_index(NAMESPACE_INDEX, "ns")) == {"foo"}
    store._check_invariants()


def test_delete_accepts_a_tombstone() -> None:
    store = new_indexer()
    store.add(pod("foo", "ns"))
    store.delete(DeletedFinalStateUnknown("ns/foo", pod("foo", "ns")))
    assert len(store) == 0
    assert store.list_index_func_values(NAMESPACE_INDEX) == []


# --- indices (index_test.go) --------------------------------------------------------------------


def test_get_index_func_values() -> None:
    """index_test.go TestGetIndexFuncValues."""
    index = Indexer(meta_namespace_key_func, {"testmodes": by_foo})
    index.add(pod("one", labels={"foo": "bar"}))
    index.add(pod("two", labels={"foo": "bar"}))
    index.add(pod("tre", labels={"foo": "biz"}))
    assert sorted(index.list_index_func_values("testmodes")) == ["bar", "biz"]


def test_multi_index_keys() -> None:
    """index_test.go TestMultiIndexKeys: an object with several values sits in several buckets."""
    index = Indexer(meta_namespace_key_func, {"byUser": by_users})
    one = pod("one", annotations={"users": "ernie,bert"})
    two = pod("two", annotations={"users": "bert,oscar"})
    tre = pod("tre", annotations={"users": "ernie,elmo"})
    for p in (one, two, tre):
        index.add(p)

    assert names(index.by_index("byUser", "ernie")) == {"one", "tre"}
    assert names(index.by_index("byUser", "bert")) == {"one", "two"}
    assert names(index.by_index("byUser", "oscar")) == {"two"}
    assert names(index.index("byUser", one)) == {"one", "two", "tre"}   # ernie or bert
    assert sorted(index.index_keys("byUser", "bert")) == ["one", "two"]

    index.delete(tre)
    assert names(index.by_index("byUser", "ernie")) == {"one"}
    assert index.by_index("byUser", "elmo") == []

    index.update(pod("two", annotations={"users": "oscar"}))
    assert names(index.by_index("byUser", "bert")) == {"one"}
    index._check_invariants()


def test_namespace_index() -> None:
    store = new_indexer()
    store.add(pod("a", "ns1"))
    store.add(pod("b", "ns1"))
    store.add(pod("c", "ns2"))
    store.add(pod("node"))
    assert names(store.by_index(NAMESPACE_INDEX, "ns1")) == {"a", "b"}
    assert names(store.by_index(NAMESPACE_INDEX, "")) == {"node"}
    assert names(store.index(NAMESPACE_INDEX, pod("x", "ns2"))) == {"c"}
    assert sorted(store.index_keys(NAMESPACE_INDEX, "ns1")) == ["ns1/a", "ns1/b"]
    assert store.by_index(NAMESPACE_INDEX, "nowhere") == []


def test_has_index_value_follows_the_buckets() -> None:
    store = Indexer(meta_namespace_key_func, {NAMESPACE_INDEX: meta_namespace_index_func})
    assert not store.has_index_value(NAMESPACE_INDEX, "a")
    store.add(pod("p1", "a"))
    store.add(pod("p2", "a"))
    assert store.has_index_value(NAMESPACE_INDEX, "a") and not store.has_index_value(NAMESPACE_INDEX, "b")
    store.delete(pod("p1", "a"))
    assert store.has_index_value(NAMESPACE_INDEX, "a")
    store.delete(pod("p2", "a"))
    assert not store.has_index_value(NAMESPACE_INDEX, "a")      # no empty bucket is left behind


def test_delete_removes_empty_sets_from_index() -> None:
    """thread_safe_store_test.go TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex."""
    store = Indexer(meta_namespace_key_func, {"testmodes": by_foo})
    store.add(pod("one", labels={"foo": "bar"}))
    assert store.list_index_func_values("testmodes") == ["bar"]
    store.delete(pod("one"))
    assert store.list_index_func_values("testmodes") == []
    assert store._indices["testmodes"] == {}


def test_update_removes_empty_sets_from_index() -> None:
    """Moving an object to another index value must drop the old, now empty, bucket."""
    store = Indexer(meta_namespace_key_func, {"testmodes": by_foo})
    store.add(pod("one", labels={"foo": "bar"}))
    store.update(pod("one", labels={"foo": "baz"}))
    assert store.list_index_func_values("testmodes") == ["baz"]


def test_add_keeps_non_empty_set_after_delete() -> None:
    """thread_safe_store_test.go TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex."""
    store = Indexer(meta_namespace_key_func, {"testmodes": by_foo})
    store.add(pod("one", labels={"foo": "bar"}))
    store.add(pod("two", labels={"foo": "bar"}))
    store.delete(pod("one"))
    assert store.index_keys("testmodes", "bar") == ["two"]


@pytest.mark.parametrize("users, expected", [
    # thread_safe_store_test.go TestThreadSafeStoreIndexingFunctionsWithMultipleValues
    pytest.param("ernie", {"ernie": ["one"]}, id="single"),
    pytest.param("ernie,bert", {"ernie": ["one"], "bert": ["one"]}, id="two-values"),
    pytest.param("bert,bert", {"bert": ["one"]}, id="duplicate-values"),
    pytest.param("oscar", {"oscar": ["one"]}, id="replaced"),
])
def test_indexing_functions_with_multiple_values(users: str, expected: dict[str, list[str]]) -> None:
    store = Indexer(meta_namespace_key_func, {"byUser": by_users})
    store.add(pod("one", annotations={"users": "elmo,ernie"}))
    store.update(pod("one", annotations={"users": users}))
    assert {v: store.index_keys("byUser", v) for v in store.list_index_func_values("byUser")} == expected
    store._check_invariants()


def test_add_indexers_before_data() -> None:
    store = Indexer()
    store.add_indexers({"testmodes": by_foo})
    store.add(pod("one", labels={"foo": "bar"}))
    assert names(store.by_index("testmodes", "bar")) == {"one"}
    assert set(store.get_indexers()) == {"testmodes"}


def test_add_indexers_indexes_what_is_stored() -> None:
    """Upstream's TestThreadSafeStoreAddIndexerAfterAdd: the items already stored are indexed."""
    store = Indexer()
    store.add(pod("one", labels={"foo": "bar"}))
    store.add(pod("two", labels={"foo": "baz"}))
    store.add(pod("three"))
    store.add_indexers({"testmodes": by_foo})
    assert names(store.by_index("testmodes", "bar")) == {"one"}
    assert names(store.by_index("testmodes", "baz")) == {"two"}
    store.delete(pod("one"))
    assert store.by_index("testmodes", "bar") == []
    store._check_invariants()


def test_an_update_asks_the_index_functions_about_the_new_object_only() -> None:
    """The replaced object's values are the ones remembered when it was put (stored objects
    never change); a delete asks nothing either. The buckets follow every change."""
    asked: list[str] = []

    def counted(obj: Any) -> list[str]:
        asked.append(obj.metadata.resource_version)
        return by_foo(obj)
    store = Indexer(meta_namespace_key_func, {NAMESPACE_INDEX: meta_namespace_index_func, "foo": counted})
    store.add(pod("one", "ns", labels={"foo": "a"}, rv="1"))
    store.update(pod("one", "ns", labels={"foo": "a"}, rv="2"))
    store.update(pod("one", "ns", labels={"foo": "b"}, rv="3"))
    assert asked == ["1", "2", "3"]
    assert store.by_index("foo", "a") == [] and names(store.by_index("foo", "b")) == {"one"}
    store.delete(pod("one", "ns"))
    assert asked == ["1", "2", "3"] and store.by_index("foo", "b") == [] and store._values == {"foo": {}}
    store.add(pod("two", "ns", labels={"foo": "a"}, rv="4"))
    store.replace([pod("three", "ns", labels={"foo": "c"}, rv="5")])
    assert names(store.by_index("foo", "c")) == {"three"} and store.by_index("foo", "a") == []
    store._check_invariants()


def test_add_indexers_conflict() -> None:
    store = Indexer(meta_namespace_key_func, {"testmodes": by_foo})
    with pytest.raises(ValueError, match="indexer conflict"):
        store.add_indexers({"testmodes": by_users})


def test_unknown_index_name_raises() -> None:
    with pytest.raises(KeyError):
        Indexer().by_index("nope", "x")


# --- the invariant under random operations ------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "d"])
NAMESPACES = st.sampled_from(["", "ns1", "ns2"])
USERS = st.lists(st.sampled_from(["ernie", "bert", "oscar", "elmo"]), max_size=3).map(",".join)
PODS = st.builds(lambda n, ns, u: pod(n, ns, annotations={"users": u}), NAMES, NAMESPACES, USERS)


class IndexerMachine(RuleBasedStateMachine):
    """Compares the Indexer with a plain dict model and checks its index invariant after each step."""

    @initialize()
    def setup(self) -> None:
        self.store = new_indexer()
        self.model: dict[str, Any] = {}

    @rule(obj=PODS)
    def add(self, obj: Any) -> None:
        self.store.add(obj)
        self.model[meta_namespace_key_func(obj)] = obj

    @rule(obj=PODS)
    def update(self, obj: Any) -> None:
        self.store.update(obj)
        self.model[meta_namespace_key_func(obj)] = obj

    @rule(obj=PODS)
    def delete(self, obj: Any) -> None:
        self.store.delete(obj)
        self.model.pop(meta_namespace_key_func(obj), None)

    @rule(objs=st.lists(PODS, max_size=4))
    def replace(self, objs: list[Any]) -> None:
        self.store.replace(objs, "")
        self.model = {meta_namespace_key_func(o): o for o in objs}

    @rule(user=st.sampled_from(["ernie", "bert", "oscar", "elmo", ""]))
    def by_index_agrees_with_model(self, user: str) -> None:
        want = {k for k, o in self.model.items() if user in by_users(o)}
        assert set(self.store.index_keys("byUser", user)) == want
        assert {meta_namespace_key_func(o) for o in self.store.by_index("byUser", user)} == want

    @invariant()
    def invariants(self) -> None:
        if hasattr(self, "store"):
            self.store._check_invariants()
            assert {k: self.store.get_by_key(k) for k in self.store.list_keys()} == self.model
            for bucket in self.store._indices.values():
                assert all(bucket.values()), "an empty index bucket was left behind"


IndexerMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
TestIndexer = IndexerMachine.TestCase
