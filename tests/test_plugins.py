"""Third-party catalogs register through entry points, by the mechanism the
standard catalog uses (docs/extending.md): their operators check, run, replay
and format, and may not redefine standard names."""

import json
import sys
import textwrap

import pytest

import rubriclang
from rubriclang.catalog import loader

PLUGIN_TOML = textwrap.dedent(
    '''
    [operators."transform.square"]
    kind = "transform"
    summary = "The square of a value in [0, 1]."
    output = "unit_square"
    doc = "x * x"
    ports = [{ name = "value", accepts = ["numeric"], absent = true }]
    params = []
    '''
)

PLUGIN_PY = textwrap.dedent(
    '''
    from rubriclang.catalog.entries import OperatorImpl
    from rubriclang.catalog.types import JType

    def _rule(r):
        v = r.one("value")
        return JType("score", 0, 1, optional=v.optional), []

    def _square(ports, params, types):
        return None if ports["value"] is None else ports["value"] ** 2

    def _plan(site):
        x = site.x[0]
        return f"None if {x} is None else {x} ** 2", {}

    OUTPUT_RULES = {"unit_square": _rule}
    OPERATORS = {"transform.square": OperatorImpl(_square, _plan)}
    '''
)


class _EntryPoint:
    def __init__(self, name, module):
        self.name, self.value, self._module = name, module, module

    def load(self):
        import importlib

        return importlib.import_module(self._module)


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    def install(toml=PLUGIN_TOML, py=PLUGIN_PY, name="sq_plugin"):
        pkg = tmp_path / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text(py)
        (pkg / "operators.toml").write_text(toml)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setattr(loader, "_plugins", lambda: [_EntryPoint(name, name)])
        loader.load_catalog.cache_clear()

    yield install
    loader.load_catalog.cache_clear()
    for mod in [m for m in sys.modules if m.startswith("sq_plugin") or m.startswith("bad_plugin")]:
        del sys.modules[mod]


GRAPH = """rubric p { version = 1 }
contract { scale = score[0, 1] }
criterion x: score[0, 1] = human.annotation { key = "x" }
node sq = transform.square(value: x)
sink sq
readout pointwise { output = score[0, 1] }
"""


def test_plugin_operator_checks_and_runs(plugin):
    plugin()
    rubric = rubriclang.loads(GRAPH)
    result = rubric.evaluate({"id": "1", "input": "", "response": "", "annotations": {"x": 0.5}})
    assert result.composition.decision.decision == 0.25


def test_plugin_operator_works_end_to_end_through_the_cli(plugin, tmp_path):
    from click.testing import CliRunner

    from rubriclang.cli.main import cli

    plugin()
    graph = tmp_path / "g.rbg"
    graph.write_text(GRAPH.replace("node sq = transform.square(value: x)", "node   sq =  transform.square( value: x )"))
    items = tmp_path / "items.jsonl"
    rows = [{"id": str(i), "input": "", "response": "", "annotations": {"x": x}} for i, x in enumerate((0.5, 0.25, 1.0))]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "t.jsonl"
    runner = CliRunner()
    assert runner.invoke(cli, ["check", str(graph)]).exit_code == 0
    r = runner.invoke(cli, ["run", str(graph), str(items), "--out", str(out)])
    assert r.exit_code == 0, r.output
    traces = [json.loads(line) for line in out.read_text().splitlines()]
    assert [t["operators"]["sq"]["response"] for t in traces] == [0.25, 0.0625, 1.0]
    r = runner.invoke(cli, ["replay", str(graph), str(out)])
    assert r.exit_code == 0 and "every decision is identical" in r.output
    assert runner.invoke(cli, ["fmt", str(graph)]).exit_code == 0
    assert "node sq = transform.square(value: x)" in graph.read_text()


def test_plugin_operator_without_a_template_calls_its_function(plugin):
    plugin(py=PLUGIN_PY.replace("OperatorImpl(_square, _plan)", "_square"))
    rubric = rubriclang.loads(GRAPH)
    result = rubric.evaluate({"id": "1", "input": "", "response": "", "annotations": {"x": 0.5}})
    assert result.composition.decision.decision == 0.25


def test_plugin_may_not_redefine_a_standard_rule(plugin):
    plugin(py=PLUGIN_PY.replace('{"unit_square": _rule}', '{"unit_square": _rule, "mean": _rule}'), name="bad_plugin")
    with pytest.raises(loader.CatalogError, match="output rule `mean`"):
        loader.load_catalog()


def test_plugin_operator_needs_a_function(plugin):
    plugin(py=PLUGIN_PY.replace('OPERATORS = {"transform.square"', 'OPERATORS = {"transform.other"'), name="bad_plugin")
    with pytest.raises(loader.CatalogError, match="without an entry.*transform.square"):
        loader.load_catalog()


@pytest.mark.parametrize(
    "edit, line, message",
    [
        (('kind = "transform"', 'kind = "transfrom"'), 3, "`kind` must be one of transform, reduce, gate, not `transfrom` (did you mean `transform`?)"),
        (('output = "unit_square"\n', ""), 2, "operator `transform.square` needs `output`"),
        (("params = []", 'params = [{ name = "k", typ = "number" }]'), 8, "unknown key `typ` in parameter `k` of operator `transform.square` (did you mean `type`?)"),
        (('accepts = ["numeric"]', 'accepts = "numeric"'), 7, "`accepts` must be a list, not string 'numeric'"),
    ],
)
def test_a_malformed_plugin_catalog_is_an_error_at_its_line(plugin, edit, line, message):
    # Checked by the one TOML schema validator as the file is read, not a KeyError later.
    plugin(toml=PLUGIN_TOML.replace(*edit), name="bad_plugin")
    with pytest.raises(loader.CatalogError) as err:
        loader.load_catalog()
    assert str(err.value).endswith(f"operators.toml:{line}: {message}")
