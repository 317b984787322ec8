"""Fixtures of the evaluation tests: one `rbg fit` of test_fit's graph and
items per set of options, shared by the tests that only read it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result

from .test_fit import GRAPH, _fit


@pytest.fixture(scope="session")
def default_fit(tmp_path_factory):
    """default_fit(*options) -> (result, fitted file) of `rbg fit` on
    test_fit's GRAPH and items with `options`, run once a session for each;
    the tests read the result and the file and leave them as they are."""
    runs: dict[tuple[str, ...], tuple[Result, Path]] = {}

    def fit(*options: str) -> tuple[Result, Path]:
        if options not in runs:
            runs[options] = _fit(tmp_path_factory.mktemp("fit"), GRAPH, None, *options)
        return runs[options]

    return fit
