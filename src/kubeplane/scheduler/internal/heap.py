"""A binary heap with keyed update and delete. Upstream: pkg/scheduler/backend/heap/heap.go"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class Heap(Generic[T]):
    """Items ordered by less (ties: insertion order), addressable by key_func(item).

    sort_key (ours): a function with sort_key(a) < sort_key(b) exactly when less(a, b); the
    heap then compares (sort_key, insertion seq) tuples, worked out when an item is added or
    updated, at C level instead of calling less twice per comparison. An item's order must
    not change while it is in the heap except through add_or_update (as with less).

    Invariant: _index[key_func(_items[i][2])] == i for every i, and the heap property holds
    for _lt over _items; with sort_key, _items[i][0] is (sort_key(item), seq).
    """

    def __init__(self, key_func: Callable[[T], str], less: Callable[[T, T], bool],
                 sort_key: Callable[[T], Any] | None = None) -> None:
        self._key = key_func
        self._less = less
        self._sort_key = sort_key
        self._items: list[tuple[Any, str, T]] = []      # (insertion seq or (sort key, seq), key, item)
        self._index: dict[str, int] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[T]:
        return (item for _, _, item in self._items)

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._items[i][2]

    def add_or_update(self, item: T) -> None:
        """Insert item, or replace the item with the same key and restore order."""
        key = self._key(item)
        i = self._index.get(key)
        sort_key = self._sort_key
        if i is not None:
            seq = self._items[i][0]
            if sort_key is not None:
                seq = (sort_key(item), seq[1])
            self._items[i] = (seq, key, item)
            self._fix(i)
            return
        seq = next(self._seq)
        self._items.append(((sort_key(item), seq) if sort_key is not None else seq, key, item))
        self._index[key] = len(self._items) - 1
        self._up(len(self._items) - 1)

    def delete(self, key: str) -> T | None:
        i = self._index.get(key)
        if i is None:
            return None
        return self._remove_at(i)

    def peek(self) -> T | None:
        return self._items[0][2] if self._items else None

    def pop(self) -> T:
        """The least item; IndexError when empty."""
        if not self._items:
            raise IndexError("pop from an empty heap")
        return self._remove_at(0)

    def _remove_at(self, i: int) -> T:
        last = len(self._items) - 1
        self._swap(i, last)
        _, key, item = self._items.pop()
        del self._index[key]
        if i < len(self._items):
            self._fix(i)
        return item

    def _lt(self, i: int, j: int) -> bool:
        a, b = self._items[i], self._items[j]
        if self._sort_key is not None:
            return bool(a[0] < b[0])
        if self._less(a[2], b[2]):
            return True
        if self._less(b[2], a[2]):
            return False
        return a[0] < b[0]

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._index[items[i][1]] = i
        self._index[items[j][1]] = j

    def _fix(self, i: int) -> None:
        if not self._up(i):
            self._down(i)

    def _up(self, i: int) -> bool:
        moved = False
        while i > 0:
            parent = (i - 1) // 2
            if not self._lt(i, parent):
                break
            self._swap(i, parent)
            i = parent
            moved = True
        return moved

    def _down(self, i: int) -> None:
        n = len(self._items)
        while True:
            left, smallest = 2 * i + 1, i
            if left < n and self._lt(left, smallest):
                smallest = left
            if left + 1 < n and self._lt(left + 1, smallest):
                smallest = left + 1
            if smallest == i:
                return
            self._swap(i, smallest)
            i = smallest

    def check_invariants(self) -> None:
        for i, (_, key, item) in enumerate(self._items):
            assert self._index[key] == i and self._key(item) == key
            if i > 0:
                assert not self._lt(i, (i - 1) // 2)
        assert len(self._index) == len(self._items)
