"""`RBG_PLAIN_LIBS` names the parts that run their plain library path: `1`
or `all` every part, else a comma-separated list; unset, empty or `0` none."""

from __future__ import annotations

import pytest

from rubriclang.plainlibs import plain


@pytest.mark.parametrize(
    "value, http, parser",
    [
        (None, False, False),
        ("", False, False),
        ("0", False, False),
        ("1", True, True),
        ("ALL", True, True),
        ("http", True, False),
        (" parser , http ", True, True),
        ("parser", False, True),
        ("htttp", False, False),
    ],
)
def test_the_switch_names_the_parts_it_switches(monkeypatch, value, http, parser):
    if value is None:
        monkeypatch.delenv("RBG_PLAIN_LIBS", raising=False)
    else:
        monkeypatch.setenv("RBG_PLAIN_LIBS", value)
    assert (plain("http"), plain("parser")) == (http, parser)
