"""Lark's analysed grammar is a pickle: it is cached only in a private folder
of the user's cache directory, keyed by everything that shapes it, and never
read from a folder someone else could write."""

from __future__ import annotations

import os
import stat

import pytest

from rubriclang.syntax import larkcache, larkparse, parse


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_cache_file_is_in_a_private_folder_of_the_users_cache_directory(cache_home):
    path = larkcache.cache_file("start: NAME", "basic")
    assert isinstance(path, str)
    folder = cache_home / "rubriclang" / "lark"
    assert os.path.dirname(path) == str(folder)
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0


def test_the_file_name_is_keyed_by_the_grammar_and_the_lexer():
    base = larkcache.cache_file("start: NAME", "basic")
    assert base == larkcache.cache_file("start: NAME", "basic")
    assert base != larkcache.cache_file("start: NUMBER", "basic")
    assert base != larkcache.cache_file("start: NAME", "contextual")


def test_a_folder_others_can_write_is_not_used(cache_home):
    folder = cache_home / "rubriclang" / "lark"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    assert larkcache.cache_file("start: NAME", "basic") is False


def test_a_folder_another_user_owns_is_not_used(monkeypatch):
    uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)  # the os larkcache calls
    assert larkcache.cache_file("start: NAME", "basic") is False


def test_without_a_usable_cache_folder_parsing_still_works(cache_home):
    cache_home.write_text("a file where the folder would be")
    assert larkcache.cache_file("start: NAME", "basic") is False
    larkparse._contextual.cache_clear()
    try:
        result = parse("sink node\n")  # a keyword as a name: Lark's contextual parser parses it
        assert result.diagnostics == () and result.module is not None
        assert larkparse._contextual.cache_info().currsize == 1
    finally:
        larkparse._contextual.cache_clear()
