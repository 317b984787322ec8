"""Third-party catalogs register through entry points, by the mechanism the
standard catalog uses (docs/extending.md): their operators check, run, replay
and format, and may not redefine standard names."""

import json
import sys
import textwrap

import pytest

import rubriclang
from rubriclang.audit.judge import JudgeInfo
from rubriclang.catalog import loader
from rubriclang.catalog.types import BOOL

PLUGIN_TOML = textwrap.dedent(
    """
    [operators."transform.square"]
    kind = "transform"
    summary = "The square of a value in [0, 1]."
    output_type = "`score[0, 1]`"
    problems = "an input outside [0, 1]"
    doc = "x * x"
    ports = [{ name = "value", accepts = ["numeric"], absent = true }]
    params = []
    """
)

PLUGIN_PY = textwrap.dedent(
    """
    from rubriclang.catalog.entries import OperatorImpl
    from rubriclang.catalog.types import JType

    def _rule(r):
        v = r.one("value")
        problems = []
        if not (0 <= v.lo and v.hi <= 1):
            problems = [("RB203", "`transform.square` squares values in [0, 1] only", None)]
        return JType("score", 0, 1, optional=v.optional), problems

    def _square(ports, params, types):
        return None if ports["value"] is None else ports["value"] ** 2

    def _plan(site):
        x = site.x[0]
        return f"None if {x} is None else {x} ** 2", {}

    OPERATORS = {"transform.square": OperatorImpl(_square, _rule, _plan)}
    """
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
    rows = [
        {"id": str(i), "input": "", "response": "", "annotations": {"x": x}} for i, x in enumerate((0.5, 0.25, 1.0))
    ]
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


def test_plugin_operator_is_typed_by_the_rule_its_entry_holds(plugin):
    from rubriclang.checker import check_source

    plugin()
    typed = check_source(GRAPH.replace("score[0, 1] = human", "ordinal[0, 1] = human"), "g.rbg")
    assert not typed.diagnostics and typed.graph is not None
    assert str(typed.graph.nodes["sq"].type) == "score[0, 1]"
    wide = check_source(GRAPH.replace("score[0, 1] = human", "score[0, 2] = human"), "g.rbg")
    assert [(d.code, d.message) for d in wide.diagnostics] == [
        ("RB203", "`transform.square` squares values in [0, 1] only")
    ]


def test_plugin_operator_without_a_template_calls_its_function(plugin):
    plugin(py=PLUGIN_PY.replace("OperatorImpl(_square, _rule, _plan)", "OperatorImpl(_square, _rule)"))
    rubric = rubriclang.loads(GRAPH)
    result = rubric.evaluate({"id": "1", "input": "", "response": "", "annotations": {"x": 0.5}})
    assert result.composition.decision.decision == 0.25


def test_plugin_operator_entry_must_hold_its_rule(plugin):
    # A bare function has no output rule: the entry is refused, never given a default.
    plugin(py=PLUGIN_PY.replace("OperatorImpl(_square, _rule, _plan)", "_square"), name="bad_plugin")
    with pytest.raises(loader.CatalogError, match=r"OPERATORS entries for transform\.square must be `OperatorImpl`s"):
        loader.load_catalog()


def test_plugin_operator_needs_a_function(plugin):
    plugin(py=PLUGIN_PY.replace('OPERATORS = {"transform.square"', 'OPERATORS = {"transform.other"'), name="bad_plugin")
    with pytest.raises(loader.CatalogError, match=r"without an entry.*transform\.square"):
        loader.load_catalog()


@pytest.mark.parametrize(
    "edit, line, message",
    [
        (
            ('kind = "transform"', 'kind = "transfrom"'),
            3,
            "`kind` must be one of transform, reduce, gate, not `transfrom` (did you mean `transform`?)",
        ),
        (('output_type = "`score[0, 1]`"\n', ""), 2, "operator `transform.square` needs `output_type`"),
        # The output rule is the entry's, no longer named in the TOML.
        (
            ('output_type = "`score[0, 1]`"', 'output_type = "`score[0, 1]`"\noutput = "unit_square"'),
            6,
            "unknown key `output` in operator `transform.square` (did you mean `output_type`?)",
        ),
        (
            ("params = []", 'params = [{ name = "k", typ = "number" }]'),
            9,
            "unknown key `typ` in parameter `k` of operator `transform.square` (did you mean `type`?)",
        ),
        (('accepts = ["numeric"]', 'accepts = "numeric"'), 8, "`accepts` must be a list, not string 'numeric'"),
    ],
)
def test_a_malformed_plugin_catalog_is_an_error_at_its_line(plugin, edit, line, message):
    # Checked by the one TOML schema validator as the file is read, not a KeyError later.
    plugin(toml=PLUGIN_TOML.replace(*edit), name="bad_plugin")
    with pytest.raises(loader.CatalogError) as err:
        loader.load_catalog()
    assert str(err.value).endswith(f"operators.toml:{line}: {message}")


TRAITS_TOML = textwrap.dedent(
    """
    [operators."reduce.pick_low"]
    kind = "reduce"
    summary = "The lowest input."
    output_type = "the first input's type"
    ports = [{ name = "inputs", accepts = ["numeric"], variadic = true, min = 1 }]

    [operators."transform.passes"]
    kind = "transform"
    summary = "True when the score is at least `at`."
    output_type = "`bool`"
    ports = [{ name = "value", accepts = ["numeric"] }]
    params = [
        { name = "at", type = "number", required = true },
        { name = "inclusive", type = "boolean", default = true },
    ]
    """
)

TRAITS_PY = textwrap.dedent(
    """
    from rubriclang.catalog.entries import OperatorImpl
    from rubriclang.catalog.types import BOOL

    OPERATORS = {
        "reduce.pick_low": OperatorImpl(
            lambda ports, params, types: min(ports["inputs"]),
            lambda r: (r.many("inputs")[0], []),
            traits=frozenset({"selects"}),
        ),
        "transform.passes": OperatorImpl(
            lambda ports, params, types: ports["value"] >= params["at"],
            lambda r: (BOOL, []),
            traits=frozenset({"cuts"}),
        ),
    }
    """
)


def test_plugin_operators_traits_are_read_by_the_viewer_and_the_audit(plugin):
    # The viewer's decided path and the audit's threshold sink read the entry's
    # traits, so a plugin operator is treated as the standard one it resembles.
    from rubriclang.audit.report_json import _threshold_sink
    from rubriclang.checker import check_source
    from rubriclang.review.view import view
    from rubriclang.view.graphsvg import decided_path

    plugin(toml=TRAITS_TOML, py=TRAITS_PY)
    graph = check_source(
        """rubric p { version = 1 }
contract { scale = bool }
criterion a: score[0, 1] = human.annotation { key = "a" }
criterion b: score[0, 1] = human.annotation { key = "b" }
node low = reduce.pick_low(inputs: [a, b])
node ok = transform.passes(value: low) { at = 0.5 }
sink ok
readout pointwise { output = bool }
""",
        "g.rbg",
    ).graph
    assert graph is not None
    nodes, _ = decided_path(view(graph), {"a": 0.2, "b": 0.9, "low": 0.2, "ok": False}, "ok")
    assert nodes == {"ok", "low", "a"}
    judge = JudgeInfo(graph, "pointwise", "binary", BOOL, True, frozenset({"response"}))
    sink = _threshold_sink(judge)
    assert sink is not None and sink.name == "ok"


def test_a_plugin_that_is_a_module_not_a_package_is_a_catalog_error(tmp_path, monkeypatch):
    (tmp_path / "flat_plugin.py").write_text(PLUGIN_PY)
    (tmp_path / "operators.toml").write_text(PLUGIN_TOML)  # beside it, which is not inside a package
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(loader, "_plugins", lambda: [_EntryPoint("flat", "flat_plugin")])
    loader.load_catalog.cache_clear()
    try:
        with pytest.raises(loader.CatalogError, match=r"catalog plugin `flat` \(flat_plugin\) is not a package"):
            loader.load_catalog()
    finally:
        loader.load_catalog.cache_clear()
        sys.modules.pop("flat_plugin", None)


def test_a_zipped_plugin_package_loads_its_toml_from_the_archive(tmp_path, monkeypatch):
    import zipfile

    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zip_plugin/__init__.py", PLUGIN_PY)
        zf.writestr("zip_plugin/operators.toml", PLUGIN_TOML)
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.setattr(loader, "_plugins", lambda: [_EntryPoint("zipped", "zip_plugin")])
    loader.load_catalog.cache_clear()
    try:
        assert loader.load_catalog().operators["transform.square"].source == "plugin zipped"
    finally:
        loader.load_catalog.cache_clear()
        sys.modules.pop("zip_plugin", None)
