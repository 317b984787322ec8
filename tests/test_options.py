"""Options objects (cli/options.collect): a family of click options reaches
a command as one frozen value, with the fields it has no option for at their
given values; every command that takes the LLM options builds its server the
same way (LLMOptions.server), so it refuses the same mistakes alike."""

from __future__ import annotations

import attrs
import click
import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli
from rubriclang.cli.options import collect, option_names


@attrs.frozen
class _Pair:
    first: int
    second: str
    fixed: bool = False


_PAIR = [
    click.option("--first", type=int, default=1, show_default=True, help="The first."),
    click.option("--second", default="b", help="The second."),
]


def _command(**fixed):
    @click.command()
    @click.option("--before", is_flag=True)
    @collect(_Pair, _PAIR, "pair", **fixed)
    @click.option("--after", is_flag=True)
    def command(before, pair, after):
        click.echo(repr((before, pair, after)))

    return command


def test_collected_options_reach_the_command_as_one_value_with_its_fixed_fields():
    r = CliRunner().invoke(_command(fixed=True), ["--second", "z", "--after"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == repr((False, _Pair(1, "z", True), True))


def test_collected_options_keep_their_place_and_order_in_the_help():
    text = CliRunner().invoke(_command(), ["--help"]).output
    places = [text.index(name) for name in ("--before", "--first", "--second", "--after")]
    assert places == sorted(places)
    assert "[default: 1]" in text


def test_option_names_are_the_parameters_the_options_fill():
    assert option_names(_PAIR) == ["first", "second"]


@pytest.mark.parametrize(
    "command",
    [
        ["run", "g.rbg", "items.jsonl", "--out", "t.jsonl"],
        ["eval", "g.rbg", "items.jsonl"],
        ["compile", "spec.toml", "-o", "out.rbg"],
    ],
)
def test_every_command_with_llm_options_refuses_a_model_file_beside_a_server(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.rbg").write_text(
        'rubric g { version = 1 }\ncontract { scale = bool }\ncriterion c: bool = llm.check { question = "Right?" }\n'
        "sink c\nreadout pointwise { output = bool }\n"
    )
    (tmp_path / "items.jsonl").write_text('{"id": "1", "input": "q", "response": "a", "gold": true}\n')
    (tmp_path / "spec.toml").write_text(
        '[rubric]\nname = "r"\ntext = "Right?"\n[task]\ndescription = "Answer."\n[contract]\nscale = "bool"\n'
    )
    r = CliRunner().invoke(cli, [*command, "--base-url", "http://127.0.0.1:9/v1", "--model-file", "m.gguf"])
    assert r.exit_code == 2, r.output
    assert "--model-file runs the embedded model, which --base-url replaces: give one of them" in r.output
