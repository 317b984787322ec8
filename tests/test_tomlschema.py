"""The one TOML schema validator: every mistake is `path:line`, what is
wrong and (where there is one) a hint, in the same words for every file."""

from __future__ import annotations

import tomllib

import pytest

from rubriclang.errors import LocatedError
from rubriclang.tomlfile import Lines
from rubriclang.tomlschema import Field, Place, check

FIELDS = {
    "name": Field(str, required=True, hint="name it"),
    "count": Field(int, lo=1, hi=10),
    "rate": Field(float, lo=0.0),
    "mode": Field(str, choices=("fast", "slow")),
    "tags": Field(list, items=str),
    "sub": Field(dict),
}
TEXT = 'name = "x"\ncount = 3\nrate = 1\nmode = "fast"\ntags = ["a"]\n\n[sub]\nk = 1\n'


def _check(text: str, table: str = "") -> dict:
    data = tomllib.loads(text)
    return check(data, FIELDS, Place(Lines("f.toml", text), LocatedError, "the file", table))


def _error(text: str) -> LocatedError:
    with pytest.raises(LocatedError) as err:
        _check(text)
    return err.value


def test_the_values_come_back_with_integers_as_floats_for_number_fields():
    values = _check(TEXT)
    assert values["rate"] == 1.0 and isinstance(values["rate"], float)
    assert values["count"] == 3 and values["tags"] == ["a"] and values["sub"] == {"k": 1}


@pytest.mark.parametrize(
    "change, where, message, hint",
    [
        (("count = 3", "cuont = 3"), "f.toml:2", "unknown key `cuont` in the file", "did you mean `count`?"),
        (('name = "x"\n', ""), "f.toml", "the file needs `name`", "name it"),
        (("count = 3", 'count = "3"'), "f.toml:2", "`count` must be an integer, not string '3'", ""),
        (("count = 3", "count = true"), "f.toml:2", "`count` must be an integer, not boolean true", ""),
        (("count = 3", "count = 11"), "f.toml:2", "`count` must be between 1 and 10, not 11", ""),
        (("rate = 1", "rate = -0.5"), "f.toml:3", "`rate` must be at least 0.0, not -0.5", ""),
        (("rate = 1", "rate = nan"), "f.toml:3", "`rate` must be a finite number, not nan", ""),
        (
            ('mode = "fast"', 'mode = "fats"'),
            "f.toml:4",
            "`mode` must be one of fast, slow, not `fats`",
            "did you mean `fast`?",
        ),
        (('tags = ["a"]', "tags = [1]"), "f.toml:5", "`tags` must be a list, not array [1]", ""),
        (("[sub]\nk = 1", "sub = 5"), "f.toml:7", "`sub` must be a table, not integer 5", ""),
    ],
)
def test_each_kind_of_mistake_names_its_line_in_one_format(change, where, message, hint):
    text = TEXT.replace(*change)
    assert text != TEXT
    err = _error(text)
    assert (err.where, err.message, err.hint) == (where, message, hint)


def test_an_unknown_table_is_named_at_its_header():
    err = _error(TEXT + "\n[extra]\nx = 1\n")
    assert (err.where, err.message) == ("f.toml:10", "unknown key `extra` in the file")


def test_a_huge_key_or_value_is_quoted_cut_to_an_excerpt():
    from rubriclang.safetext import ELLIPSIS, EXCERPT_WIDTH

    huge = "z" * 50_000
    for text in (f"{huge} = 1\n" + TEXT, TEXT.replace('mode = "fast"', f'mode = "{huge}"')):
        err = _error(text)
        assert "z" * (EXCERPT_WIDTH - len(ELLIPSIS)) + ELLIPSIS + "`" in err.message
        assert len(err.message) + len(err.hint) < 3 * EXCERPT_WIDTH + 200, err.message[:200]
