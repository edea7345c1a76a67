"""SortedKeys against a plain sorted set, with chunk splits and merges forced by a tiny LOAD."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kubeplane.storage import sorted_keys
from kubeplane.storage.sorted_keys import SortedKeys, prefix_end


@pytest.mark.parametrize(("prefix", "end"), [
    pytest.param("/registry/pods/default/", "/registry/pods/default0", id="slash"),
    pytest.param("a", "b", id="letter"),
    pytest.param("", None, id="everything"),
    pytest.param("a\U0010ffff", "b", id="max-char"),
])
def test_prefix_end(prefix: str, end: str | None) -> None:
    assert prefix_end(prefix) == end


ops = st.lists(st.tuples(st.booleans(), st.text("ab/", max_size=4)), max_size=200)


@settings(max_examples=200, deadline=None)
@given(ops=ops, prefix=st.text("ab/", max_size=3))
def test_matches_sorted_set(ops: list[tuple[bool, str]], prefix: str) -> None:
    old_load = sorted_keys.LOAD
    sorted_keys.LOAD = 4                    # chunks split above 8 keys, merge below 1
    try:
        sk, model = SortedKeys(), set[str]()
        for add, key in ops:
            if add and key not in model:
                sk.add(key)
                model.add(key)
            elif not add and key in model:
                sk.remove(key)
                model.discard(key)
            sk._check_invariants()
        want = sorted(k for k in model if k.startswith(prefix))
        assert sk.range(prefix) == want and sk.count(prefix) == len(want)
        assert len(sk) == len(model)
    finally:
        sorted_keys.LOAD = old_load


def test_remove_missing_raises() -> None:
    sk = SortedKeys()
    sk.add("b")
    with pytest.raises(KeyError):
        sk.remove("a")
    with pytest.raises(KeyError):
        sk.remove("c")
