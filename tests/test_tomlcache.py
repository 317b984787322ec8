"""The on-disk cache of packaged TOML data: keyed by content, data only,
rebuilt when missing or damaged, never an error."""

from __future__ import annotations

import marshal

import pytest

from rubriclang import tomlcache
from rubriclang.catalog.loader import _standard_data


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    monkeypatch.setattr(tomlcache.tempfile, "gettempdir", lambda: str(tmp_path))


def counting(result):
    calls = []

    def parse():
        calls.append(1)
        return result

    return parse, calls


def test_a_second_read_of_the_same_texts_parses_nothing():
    parse, calls = counting([{"a": 1}])
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert len(calls) == 1


def test_an_edited_file_is_a_new_key():
    texts = ("a = 1", None)
    assert tomlcache.cache_path(texts) == tomlcache.cache_path(("a = 1", None))
    assert tomlcache.cache_path(texts) != tomlcache.cache_path(("a = 2", None))
    assert tomlcache.cache_path(texts) != tomlcache.cache_path(("a = 1", ""))  # missing is not empty
    assert tomlcache.cache_path(("ab", "c")) != tomlcache.cache_path(("a", "bc"))


@pytest.mark.parametrize(
    "damage",
    [b"", b"\x00garbage", marshal.dumps("not a list"), marshal.dumps([{"a": 1}, {"b": 2}]), marshal.dumps([1])],
)
def test_a_damaged_or_foreign_cache_file_is_rebuilt(damage):
    path = tomlcache.cache_path(("a = 1",))
    with open(path, "wb") as fh:
        fh.write(damage)
    parse, calls = counting([{"a": 1}])
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert calls == [1]
    with open(path, "rb") as fh:
        assert marshal.load(fh) == [{"a": 1}]


def test_an_unwritable_cache_is_no_error(tmp_path, monkeypatch):
    monkeypatch.setattr(tomlcache.tempfile, "gettempdir", lambda: str(tmp_path / "missing"))
    parse, calls = counting([{"a": 1}])
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert len(calls) == 2


def test_a_parse_error_propagates_and_caches_nothing(tmp_path):
    def broken():
        raise ValueError("bad toml")

    with pytest.raises(ValueError, match="bad toml"):
        tomlcache.cached_parse(("a = ",), broken)
    assert not list(tmp_path.iterdir())


def test_the_cached_catalog_data_equals_a_fresh_parse(tmp_path):
    fresh = _standard_data()
    assert len(list(tmp_path.iterdir())) == 1
    assert _standard_data() == fresh  # from the file the first call wrote
