"""pytest-benchmark version of the front-end throughput benchmark.

Not part of the default test run (`testpaths = ["tests"]`); run it with

    .venv/bin/pytest benchmarks -q --benchmark-enable

Each benchmark passes once over a generated corpus of 1,000 rubrics
(`gen.corpus`, seed 0) and records lines per second in `extra_info`. Speed is
reported, not asserted: a busy machine must not fail a test run. The script
`bench_frontend.py` prints the figures against their targets.
"""

from __future__ import annotations

import pytest
from gen import MAX_LINES, MIN_LINES, corpus, rubric  # benchmarks/ is on sys.path (rootdir import)

from rubriclang.checker import check_source
from rubriclang.syntax import parse


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return corpus(1000, seed=0)


def _lines(texts: list[str]) -> int:
    return sum(t.count("\n") for t in texts)


def test_generator_is_deterministic_and_sized():
    assert rubric(17, seed=3) == rubric(17, seed=3)
    assert rubric(17, seed=3) != rubric(17, seed=4)
    for text in corpus(50, seed=1):
        assert MIN_LINES <= text.count("\n") <= MAX_LINES


def test_every_generated_rubric_checks_clean(texts):
    for i, text in enumerate(texts):
        result = check_source(text, f"generated_{i}.rbg")
        assert result.diagnostics == (), (i, result.diagnostics[:1])
        assert result.graph is not None


def _pass(fn, texts):
    def run():
        for i, text in enumerate(texts):
            fn(text, f"generated_{i}.rbg")

    return run


def test_parse_and_check_throughput(benchmark, texts):
    check_source(texts[0], "warm-up.rbg")  # build the parser and load the catalog outside the timing
    benchmark.pedantic(_pass(check_source, texts), rounds=3, iterations=1, warmup_rounds=0)
    lines = _lines(texts)
    benchmark.extra_info["lines"] = lines
    if benchmark.stats:  # None under --benchmark-disable, where the pass ran once untimed
        benchmark.extra_info["lines_per_second"] = round(lines / benchmark.stats.stats.median)


def test_parse_only_throughput(benchmark, texts):
    parse(texts[0], "warm-up.rbg")
    benchmark.pedantic(_pass(parse, texts), rounds=3, iterations=1, warmup_rounds=0)
    lines = _lines(texts)
    benchmark.extra_info["lines"] = lines
    if benchmark.stats:
        benchmark.extra_info["lines_per_second"] = round(lines / benchmark.stats.stats.median)
