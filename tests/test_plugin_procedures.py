"""A plugin adds a local procedure and an operator with one registry entry
each, registered as docs/extending.md says (an installed distribution's entry
point in the group `rubriclang.catalogs`), and nothing under rubriclang/ is
edited: the local backend judges its procedure by the entry's `judge`, as it
judges the standard rules."""

import json
import sys
import textwrap

import pytest
from click.testing import CliRunner

import rubriclang
from rubriclang.catalog import loader
from rubriclang.cli.main import cli

OPERATORS_TOML = textwrap.dedent(
    """
    [operators."transform.both"]
    kind = "transform"
    summary = "The bool input, unchanged."
    output_type = "`bool`, optional when the input is"
    doc = "The input, as it is."
    ports = [{ name = "value", accepts = ["bool"], absent = true }]
    params = []
    """
)

PROCEDURES_TOML = textwrap.dedent(
    """
    [procedures."rule.starts_with"]
    summary = "True when the field starts with the prefix."
    produces = ["bool"]
    doc = "Compared after leading whitespace."
    example = 'criterion greets: bool = rule.starts_with { prefix = "Dear" }'
    params = [
      { name = "prefix", type = "string", required = true, doc = "The text the field starts with." },
      { name = "field", type = "choice", choices = ["response", "input", "reference"], default = "response" },
    ]
    """
)

PLUGIN_PY = textwrap.dedent(
    """
    from rubriclang.catalog.entries import OperatorImpl, ProcedureImpl
    from rubriclang.catalog.types import BOOL
    from rubriclang.interp.backend import Judgment


    def _starts_with(request, backend):
        p = request.criterion.params
        text = {"response": request.response, "input": request.item.input}.get(p["field"], request.item.reference)
        if text is None:
            return Judgment.failed(f"the item has no `{p['field']}`")
        return Judgment(text.lstrip().startswith(p["prefix"]), raw=text[:10])


    def _check(c):
        if c.values.get("prefix") == "":
            c.err("RB203", c.param_span("prefix"), "`prefix` is empty: every text starts with it")


    def _same(r):
        return BOOL.as_optional(r.one("value").optional), []


    OPERATORS = {"transform.both": OperatorImpl(lambda ports, params, types: ports["value"], _same)}
    PROCEDURES = {"rule.starts_with": ProcedureImpl(backend="local", judge=_starts_with, check=_check)}
    """
)

GRAPH = """rubric greeting { version = 1 }
contract { scale = bool }

criterion greets: bool = rule.starts_with { prefix = "Dear" }
criterion quotes: bool = rule.starts_with { prefix = "Q", field = input }

node greets_too = transform.both(value: greets)
node verdict = reduce.all(inputs: [greets_too, quotes])

sink verdict
readout pointwise { output = bool }
"""

ITEMS = [
    {"id": "1", "input": "Q: write to Ann", "response": "  Dear Ann, hello."},
    {"id": "2", "input": "Q: write to Bo", "response": "Hi Bo."},
    {"id": "3", "input": "write to Cy", "response": "Dear Cy,"},
]


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Install the plugin as a distribution would be: its package, and a
    dist-info folder whose entry point names it, on sys.path."""

    def install(py=PLUGIN_PY, name="acme_rules"):
        pkg = tmp_path / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text(py)
        (pkg / "operators.toml").write_text(OPERATORS_TOML)
        (pkg / "procedures.toml").write_text(PROCEDURES_TOML)
        info = tmp_path / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[rubriclang.catalogs]\nacme = {name}\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        loader.load_catalog.cache_clear()

    yield install
    loader.load_catalog.cache_clear()
    for mod in [m for m in sys.modules if m.split(".")[0] in ("acme_rules", "acme_broken")]:
        del sys.modules[mod]


def test_the_plugin_is_found_through_its_entry_point(installed):
    installed()
    catalog = loader.load_catalog()
    assert catalog.procedures["rule.starts_with"].source == "plugin acme"
    assert catalog.operators["transform.both"].source == "plugin acme"
    assert loader.load_catalog(plugins=False).procedures.get("rule.starts_with") is None


def test_a_plugin_procedure_and_operator_check_and_run_through_the_api(installed):
    installed()
    rubric = rubriclang.loads(GRAPH)
    results = [rubric.evaluate(item) for item in ITEMS]
    assert [r.composition.decision.decision for r in results] == [True, False, False]
    first = results[0].record
    assert first["criteria"]["greets"]["response"]["value"] is True
    assert first["criteria"]["greets"]["response"]["raw"] == "  Dear Ann"


def test_a_plugin_procedure_runs_and_replays_through_the_cli(installed, tmp_path):
    installed()
    graph = tmp_path / "g.rbg"
    graph.write_text(GRAPH)
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(i) + "\n" for i in ITEMS))
    out = tmp_path / "t.jsonl"
    runner = CliRunner()
    checked = runner.invoke(cli, ["check", str(graph)])
    assert checked.exit_code == 0, checked.output
    r = runner.invoke(cli, ["run", str(graph), str(items), "--out", str(out)])
    assert r.exit_code == 0, r.output
    traces = [json.loads(line) for line in out.read_text().splitlines()]
    assert [t["criteria"]["quotes"]["response"]["value"] for t in traces] == [True, True, False]
    assert [t["operators"]["verdict"]["response"] for t in traces] == [True, False, False]
    r = runner.invoke(cli, ["replay", str(graph), str(out)])
    assert r.exit_code == 0 and "every decision is identical" in r.output


def test_a_plugin_procedure_failure_is_a_judgment_error_not_a_crash(installed):
    installed()
    rubric = rubriclang.loads(GRAPH.replace("field = input", "field = reference"))
    result = rubric.evaluate(ITEMS[0])
    quotes = result.record["criteria"]["quotes"]["response"]
    assert quotes["error"] == "the item has no `reference`"


def test_a_plugin_procedure_check_reports_at_its_parameter(installed):
    from rubriclang.checker import check_source

    installed()
    checked = check_source(GRAPH.replace('prefix = "Dear"', 'prefix = ""'), "g.rbg")
    assert [(d.code, d.span.line, d.message) for d in checked.diagnostics] == [
        ("RB203", 4, "`prefix` is empty: every text starts with it")
    ]


def test_a_local_plugin_procedure_without_a_judge_is_refused(installed):
    installed(PLUGIN_PY.replace("judge=_starts_with, ", ""), name="acme_broken")
    with pytest.raises(loader.CatalogError, match=r"`rule\.starts_with` is `local` but its PROCEDURES entry has no"):
        loader.load_catalog()


def test_a_judge_on_a_procedure_the_local_backend_does_not_run_is_refused(installed):
    installed(PLUGIN_PY.replace('backend="local", ', 'backend="llm", '), name="acme_broken")
    with pytest.raises(loader.CatalogError, match="has a `judge` but its backend is `llm`"):
        loader.load_catalog()
