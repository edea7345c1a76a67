"""ControllerRevision history: names, hashing, ordering, equality, and both Interfaces.

Facts from upstream's pkg/controller/history/controller_history_test.go (TestRealHistory_*,
TestFakeHistory_*, TestSortControllerRevisions, TestEqualRevision, TestFindEqualRevisions).
"""
from __future__ import annotations

import pytest

from kubeplane.api.types import apps_v1, meta_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller import history
from kubeplane.controller.controller_utils import GroupVersionKind, get_controller_of
from kubeplane.controller.history.controller_history import fnv32
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

SS_KIND = GroupVersionKind("apps", "v1", "StatefulSet")


def parent(name: str = "foo", uid: str = "uid-foo") -> apps_v1.StatefulSet:
    return apps_v1.StatefulSet(metadata=meta_v1.ObjectMeta(name=name, namespace="default", uid=uid))


def revision(data: object, number: int, *, p: apps_v1.StatefulSet | None = None,
             collision: int | None = None) -> apps_v1.ControllerRevision:
    cr = history.new_controller_revision(p or parent(), SS_KIND, {"foo": "bar"}, data, number, collision)
    cr.metadata.namespace = "default"
    return cr


def test_fnv32_is_fnv1_not_1a() -> None:
    assert fnv32(b"") == 0x811C9DC5
    assert fnv32(b"a") == 0x050C5D7E          # FNV-1; FNV-1a of "a" is 0xe40c292c


def test_name_truncates_prefix_to_223() -> None:
    assert history.controller_revision_name("a" * 300, "hash") == "a" * 223 + "-hash"
    assert history.controller_revision_name("foo", "5c7586484") == "foo-5c7586484"


def test_new_revision_is_controlled_and_labelled() -> None:
    cr = revision({"spec": {"x": 1}}, 3)
    h = cr.metadata.labels[history.CONTROLLER_REVISION_HASH_LABEL]
    assert cr.metadata.name == f"foo-{h}" and cr.revision == 3 and cr.metadata.labels["foo"] == "bar"
    ref = get_controller_of(cr)
    assert ref is not None and ref.uid == "uid-foo" and ref.kind == "StatefulSet" and ref.block_owner_deletion


def test_hash_depends_on_data_and_probe_only() -> None:
    a, b = revision({"k": 1}, 1), revision({"k": 1}, 7)
    assert a.metadata.name == b.metadata.name
    assert revision({"k": 2}, 1).metadata.name != a.metadata.name
    # A collision count is hashed as its decimal digits: 0 differs from none.
    assert revision({"k": 1}, 1, collision=0).metadata.name != a.metadata.name
    assert revision({"k": 1}, 1, collision=1).metadata.name != revision({"k": 1}, 1, collision=0).metadata.name
    assert set(a.metadata.labels[history.CONTROLLER_REVISION_HASH_LABEL]) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_hash_ignores_key_order() -> None:
    assert revision({"a": 1, "b": {"c": 2, "d": 3}}, 1).metadata.name == \
        revision({"b": {"d": 3, "c": 2}, "a": 1}, 1).metadata.name


def test_sort_by_revision_then_creation_then_name() -> None:
    def cr(name: str, number: int, ts: float | None = None) -> apps_v1.ControllerRevision:
        return apps_v1.ControllerRevision(metadata=meta_v1.ObjectMeta(
            name=name, creation_timestamp=rfc3339(ts) if ts is not None else None), revision=number)
    revs = [cr("c", 3), cr("b", 1, 20.0), cr("a", 1, 10.0), cr("z", 2), cr("y", 2)]
    assert [r.metadata.name for r in history.sort_controller_revisions(revs)] == ["a", "b", "y", "z", "c"]


@pytest.mark.parametrize(("lhs", "rhs", "equal"), [
    pytest.param(None, None, True, id="both nil"),
    pytest.param({"k": 1}, None, False, id="one nil"),
    pytest.param({"k": 1}, {"k": 1}, True, id="same data"),
    pytest.param({"k": 1}, {"k": 2}, False, id="different data"),
])
def test_equal_revision(lhs: object, rhs: object, equal: bool) -> None:
    left = revision(lhs, 1) if lhs is not None else None
    right = revision(rhs, 2) if rhs is not None else None
    assert history.equal_revision(left, right) is equal


def test_equal_revision_differing_numeric_hash_labels_are_unequal() -> None:
    a, b = revision({"k": 1}, 1), revision({"k": 1}, 1)
    a.metadata.labels[history.CONTROLLER_REVISION_HASH_LABEL] = "1"
    b.metadata.labels[history.CONTROLLER_REVISION_HASH_LABEL] = "2"
    assert not history.equal_revision(a, b)


def test_find_equal_revisions_keeps_order() -> None:
    revs = [revision({"k": 1}, 1), revision({"k": 2}, 2), revision({"k": 1}, 3)]
    assert [r.revision for r in history.find_equal_revisions(revs, revision({"k": 1}, 9))] == [1, 3]
    assert history.next_revision([]) == 1 and history.next_revision(revs) == 4


async def _real() -> tuple[FakeClientset, SharedInformerFactory, history.RealHistory]:
    fake = await FakeClientset.new(clock=FakeClock(start=1_700_000_000.0))
    factory = SharedInformerFactory(fake)
    return fake, factory, history.RealHistory(fake, factory.apps_v1().controllerrevisions().lister())


async def test_real_create_collides_and_renames() -> None:
    fake, factory, h = await _real()
    p = parent()
    first, count = await h.create_controller_revision(p, revision({"k": 1}, 1), 0)
    assert count == 0 and first.metadata.name == revision({"k": 1}, 1, collision=0).metadata.name
    # The same data again: the existing revision is returned, no collision.
    again, count = await h.create_controller_revision(p, revision({"k": 1}, 1), 0)
    assert count == 0 and again.metadata.uid == first.metadata.uid
    # Different data under the name taken: the count goes up and the name changes.
    squatter = revision({"other": True}, 1)
    squatter.metadata.name = revision({"k": 2}, 1, collision=0).metadata.name
    await fake.apps_v1().controllerrevisions("default").create(squatter)
    created, count = await h.create_controller_revision(p, revision({"k": 2}, 2), 0)
    assert count == 1 and created.metadata.name == revision({"k": 2}, 2, collision=1).metadata.name


async def test_real_update_adopt_release_delete() -> None:
    fake, factory, h = await _real()
    p = parent()
    orphan = revision({"k": 1}, 1)
    orphan.metadata.owner_references = None
    orphan = await fake.apps_v1().controllerrevisions("default").create(orphan)
    adopted = await h.adopt_controller_revision(p, SS_KIND, orphan)
    assert (ref := get_controller_of(adopted)) is not None and ref.uid == "uid-foo"
    with pytest.raises(ValueError, match="attempt to adopt revision owned by"):
        await h.adopt_controller_revision(parent("bar", "uid-bar"), SS_KIND, adopted)
    bumped = await h.update_controller_revision(adopted, 5)
    assert bumped.revision == 5
    released = await h.release_controller_revision(p, bumped)
    assert released is not None and not released.metadata.owner_references
    await h.delete_controller_revision(released)
    assert (await fake.apps_v1().controllerrevisions("default").list()).items == []


async def test_list_returns_owned_and_orphans_only() -> None:
    fake = await FakeClientset.new()
    factory = SharedInformerFactory(fake)
    inf = factory.apps_v1().controllerrevisions()
    fh = history.FakeHistory(inf)
    mine, theirs, orphan = revision({"k": 1}, 1), revision({"k": 2}, 1, p=parent("bar", "uid-bar")), revision({"k": 3}, 1)
    orphan.metadata.owner_references = None
    for cr in (mine, theirs, orphan):
        inf.informer().get_indexer().add(cr)
    listed = await fh.list_controller_revisions(parent(), ())
    assert sorted(r.metadata.name for r in listed) == sorted([mine.metadata.name, orphan.metadata.name])


async def test_fake_history_create_collides() -> None:
    fake = await FakeClientset.new()
    factory = SharedInformerFactory(fake)
    fh = history.FakeHistory(factory.apps_v1().controllerrevisions())
    p = parent()
    a, count = await fh.create_controller_revision(p, revision({"k": 1}, 1), 0)
    b, count = await fh.create_controller_revision(p, revision({"k": 1}, 2), count)
    assert count == 1 and a.metadata.name != b.metadata.name
    await fh.delete_controller_revision(a)
    assert [r.metadata.name for r in await fh.list_controller_revisions(p, ())] == [b.metadata.name]
