"""The call cache: what a key depends on, what a hit returns, the default
location, and `rbg cache stats|clear`."""

from __future__ import annotations

import json

import attrs
from click.testing import CliRunner

from rubriclang.cli.main import cli
from rubriclang.llm.cache import CallCache, call_key, default_path
from rubriclang.llm.client import ChatRequest, Completion, Sampling

REQUEST = ChatRequest(({"role": "user", "content": "Rate it."},), Sampling(), {"type": "json_object"})


def test_a_hit_returns_the_call_as_made_with_its_latency_and_attempts(tmp_path):
    cache = CallCache(str(tmp_path / "c.sqlite"))
    key = call_key("http://h/v1", "m", REQUEST)
    assert cache.get(key) is None
    cache.put(key, "http://h/v1", Completion("Score: 4", "m", None, 10, 3, "stop", 812.5, 2))
    hit = cache.get(key)
    assert hit is not None
    assert (hit.text, hit.latency_ms, hit.attempts, hit.cached) == ("Score: 4", 812.5, 2, True)
    assert (cache.hits, cache.misses) == (1, 1)


def test_the_key_depends_on_server_model_messages_sampling_and_format():
    key = call_key("s", "m", REQUEST)
    others = [
        call_key("s2", "m", REQUEST),
        call_key("s", "m2", REQUEST),
        call_key("s", "m", attrs.evolve(REQUEST, messages=({"role": "user", "content": "Rate this."},))),
        call_key("s", "m", attrs.evolve(REQUEST, sampling=Sampling(seed=1))),
        call_key("s", "m", attrs.evolve(REQUEST, sampling=Sampling(temperature=None))),
        call_key("s", "m", attrs.evolve(REQUEST, response_format=None)),
    ]
    assert len({key, *others}) == 7


def test_the_default_location_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_path() == str(tmp_path / "rubriclang" / "calls.sqlite")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path() == str(tmp_path / "home" / ".cache" / "rubriclang" / "calls.sqlite")


def test_notes_about_a_server_persist_until_cleared(tmp_path):
    path = str(tmp_path / "c.sqlite")
    CallCache(path).set_note("s", "no_response_format", "1")
    cache = CallCache(path)
    assert cache.note("s", "no_response_format") == "1" and cache.note("t", "no_response_format") is None
    cache.clear()
    assert cache.note("s", "no_response_format") is None


def test_cache_stats_and_clear_commands(tmp_path):
    path = str(tmp_path / "c.sqlite")
    cache = CallCache(path)
    for i in range(3):
        cache.put(
            call_key("s", "m", attrs.evolve(REQUEST, sampling=Sampling(seed=i))), "s", Completion("x", "m", None, 10, 2)
        )
    cache.close()
    r = CliRunner().invoke(cli, ["cache", "stats", "--cache", path, "--format", "json"])
    assert r.exit_code == 0, r.output
    stats = json.loads(r.output)
    assert (stats["entries"], stats["prompt_tokens"], stats["completion_tokens"], stats["models"]) == (
        3,
        30,
        6,
        {"m": 3},
    )
    r = CliRunner().invoke(cli, ["cache", "clear", "--cache", path])
    assert r.exit_code == 0 and f"Removed 3 cached calls from {path}" in r.output
    r = CliRunner().invoke(cli, ["cache", "stats", "--cache", path])
    assert f"{path}: 0 cached calls" in r.output


def test_cache_commands_never_create_a_cache_and_refuse_a_foreign_file(tmp_path):
    missing = tmp_path / "none.sqlite"
    r = CliRunner().invoke(cli, ["cache", "stats", "--cache", str(missing)])
    assert r.exit_code == 0 and "0 cached calls" in r.output and not missing.exists()
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database at all, " * 100)
    r = CliRunner().invoke(cli, ["cache", "clear", "--cache", str(junk)])
    assert r.exit_code == 2 and "is not a usable call cache" in r.output and "Traceback" not in r.output
