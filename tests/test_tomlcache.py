"""The on-disk cache of packaged TOML data: keyed by content (and used only
for the texts it was parsed from), data only, kept in a private folder,
rebuilt when missing or damaged, never an error."""

from __future__ import annotations

import marshal
import os
import stat

import pytest

from rubriclang import tomlcache
from rubriclang.catalog.loader import _standard_data


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


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
    assert path is not None
    with open(path, "wb") as fh:
        fh.write(damage)
    parse, calls = counting([{"a": 1}])
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert calls == [1]
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]  # from the rebuilt file
    assert calls == [1]


def test_a_cache_file_of_other_texts_under_the_same_name_is_not_used():
    # As after a CRC collision: the file's name fits, the texts it was parsed from do not.
    parse, _ = counting([{"a": 1}])
    tomlcache.cached_parse(("a = 1",), parse)
    one, two = tomlcache.cache_path(("a = 1",)), tomlcache.cache_path(("a = 2",))
    assert one is not None and two is not None
    os.replace(one, two)
    parse, calls = counting([{"a": 2}])
    assert tomlcache.cached_parse(("a = 2",), parse) == [{"a": 2}]
    assert calls == [1]


def test_the_cache_lives_in_a_private_folder_of_the_users_cache_directory(cache_home):
    path = tomlcache.cache_path(("a = 1",))
    assert path is not None
    folder = cache_home / "rubriclang" / "toml"
    assert os.path.dirname(path) == str(folder)
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_folder_others_can_write_is_never_read(cache_home):
    folder = cache_home / "rubriclang" / "toml"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    assert tomlcache.cache_path(("a = 1",)) is None
    parse, calls = counting([{"a": 1}])
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert len(calls) == 2  # parsed each time, nothing read or written there
    assert list(folder.iterdir()) == []


def test_an_unwritable_cache_is_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    parse, calls = counting([{"a": 1}])
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert tomlcache.cached_parse(("a = 1",), parse) == [{"a": 1}]
    assert len(calls) == 2


def test_a_parse_error_propagates_and_caches_nothing(cache_home):
    def broken():
        raise ValueError("bad toml")

    with pytest.raises(ValueError, match="bad toml"):
        tomlcache.cached_parse(("a = ",), broken)
    assert not list((cache_home / "rubriclang" / "toml").iterdir())


def test_the_cached_catalog_data_equals_a_fresh_parse(cache_home):
    fresh = _standard_data()
    assert len(list((cache_home / "rubriclang" / "toml").iterdir())) == 1
    assert _standard_data() == fresh  # from the file the first call wrote
