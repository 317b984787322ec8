"""A suite's mistakes quote what they are about (a key, a value, an
operator's name, a path) cut to an excerpt's width: a diagnostic stays
small whatever the size of the name the suite gave."""

from __future__ import annotations

import pytest

from rubriclang.safetext import ELLIPSIS, EXCERPT_WIDTH

HUGE = "k" * 100_000


@pytest.mark.parametrize(
    "body, said",
    [
        (f"{HUGE} = 1\n", "unknown key `"),
        (f'[options.typo_noise]\nfields = ["response"]\n{HUGE} = 1\n', "unknown key `"),
        (f"[generator]\n{HUGE} = 1\n", "unknown key `"),
        (f'operators = ["{HUGE}"]\n', "unknown operator `"),
        (f'annotations = "{HUGE}"\n', "no such file `"),
        (
            f'[[custom]]\nname = "{HUGE}!"\nsurface = "output"\nrelation = "invariant"\ninstruction = "x"\n',
            "is not a valid operator name",
        ),
    ],
)
def test_a_suite_error_quotes_a_huge_name_cut_to_an_excerpt(rbg, suite, tmp_path, body, said):
    result = rbg("audit", suite(body), "--out", tmp_path / "a")
    assert result.exit_code == 2, result.output
    assert said in result.stderr
    assert "k" * (EXCERPT_WIDTH - len(ELLIPSIS)) + ELLIPSIS + "`" in result.stderr
    assert "k" * EXCERPT_WIDTH not in result.stderr
    assert len(result.stderr) < 2_000, result.stderr[:300]


def test_a_short_quoted_name_is_shown_whole(rbg, suite, tmp_path):
    name = "q" * EXCERPT_WIDTH  # exactly the width: not cut
    result = rbg("audit", suite(f"{name} = 1\n"), "--out", tmp_path / "a")
    assert result.exit_code == 2
    assert f"unknown key `{name}`" in result.stderr
