"""IdentityMemo: values kept by an object's identity, never handed to another object."""

from rubriclang.memo import IdentityMemo


def test_a_value_is_found_only_with_the_very_object_it_was_kept_with():
    memo: IdentityMemo[str] = IdentityMemo(4)
    a, b = {"x": 1}, {"x": 1}  # equal, not the same
    assert memo.put(id(a), a, "of a") == "of a"
    assert memo.get(id(a), a) == "of a"
    assert memo.get(id(a), b) is None  # an id reused by another object finds nothing
    assert memo.get(id(b), b) is None


def test_a_full_memo_starts_again_empty():
    memo: IdentityMemo[int] = IdentityMemo(2)
    objs = [object() for _ in range(3)]
    for i, o in enumerate(objs):
        memo.put(id(o), o, i)
    assert [memo.get(id(o), o) for o in objs] == [None, None, 2]


def test_a_key_may_hold_values_beside_an_anchor():
    memo: IdentityMemo[str] = IdentityMemo(4)
    fmt = {"type": "json_object"}
    memo.put(("server", id(fmt)), fmt, "frame")
    assert memo.get(("server", id(fmt)), fmt) == "frame"
    assert memo.get(("other", id(fmt)), fmt) is None
    memo.put(("server", None), None, "no format")
    assert memo.get(("server", None), None) == "no format"


def test_a_popped_value_is_no_longer_kept():
    memo: IdentityMemo[str] = IdentityMemo(4)
    a, b = object(), object()
    memo.put(id(a), a, "of a")
    assert memo.pop(id(a), b) is None and memo.get(id(a), a) == "of a"  # not another object's
    assert memo.pop(id(a), a) == "of a"
    assert memo.get(id(a), a) is None and memo.pop(id(a), a) is None
