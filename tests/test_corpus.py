"""The checker corpus: `.rbg` cases with golden diagnostics, run by a thin harness.

Cases are data. `corpus/valid/*.rbg` must check without errors;
`corpus/invalid/RBxxx/*.rbg` must report RBxxx. Next to each case,
`NAME.diagnostics` holds what the checker says about it, one diagnostic per
line in source order:

    LINE:COL-END_LINE:END_COL CODE SEVERITY MESSAGE
      note: NOTE

Regenerate the goldens with `RBG_UPDATE_GOLDENS=1 pytest tests/test_corpus.py`
and review the diff like any other change.

The examples of `codes.toml` are checked here too: each `wrong` snippet,
completed into a whole file, reports its code, and each `right` one does not.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from goldens import assert_golden
from goldens import render_diagnostics as render

from rubriclang.catalog import load_catalog
from rubriclang.checker import check_source
from rubriclang.diagnostics.codes import registry
from rubriclang.syntax import ast, parse
from stdlib_ops import output_rules

CORPUS = Path(__file__).parent / "corpus"
SYNTAX_CODES = {code for code in registry() if code.startswith("RB0")}

CASES = sorted([*CORPUS.glob("valid/*.rbg"), *CORPUS.glob("invalid/*/*.rbg")])


def _case_id(path: Path) -> str:
    return path.relative_to(CORPUS).as_posix()


def corpus_files() -> set[Path]:
    """Every file the tests of this module read: each case and its golden."""
    return {p for case in CASES for p in (case, case.with_suffix(".diagnostics"))}


def diagnose(path: Path):
    # The path relative to the corpus keeps goldens free of this machine's paths.
    return check_source(path.read_text("utf-8"), _case_id(path)).diagnostics


@pytest.mark.parametrize("path", CASES, ids=_case_id)
def test_case_matches_its_golden(path: Path):
    assert_golden(path.with_suffix(".diagnostics"), render(diagnose(path)), _case_id(path))


@pytest.mark.parametrize("path", [p for p in CASES if p.parent.parent.name == "invalid"], ids=_case_id)
def test_invalid_case_reports_the_code_of_its_folder(path: Path):
    code = path.parent.name
    codes = [d.code for d in diagnose(path)]
    assert code in codes, f"{_case_id(path)} should report {code}, got {codes}"


@pytest.mark.parametrize("path", sorted((CORPUS / "valid").glob("*.rbg")), ids=_case_id)
def test_valid_case_has_no_errors(path: Path):
    errors = [d for d in diagnose(path) if d.is_error]
    assert not errors, render(errors)


def test_every_code_has_at_least_three_cases():
    thin = {code: len(list((CORPUS / "invalid" / code).glob("*.rbg"))) for code in registry()}
    assert {c: n for c, n in thin.items() if n < 3} == {}


def test_every_case_folder_is_a_registered_code():
    folders = {p.name for p in (CORPUS / "invalid").iterdir() if p.is_dir()}
    assert folders <= set(registry())


def test_valid_corpus_covers_the_whole_catalog():
    """Every operator, procedure, type kind and readout mode appears in a valid case."""
    text = "\n".join(p.read_text("utf-8") for p in (CORPUS / "valid").glob("*.rbg"))
    catalog = load_catalog()
    words = set(re.findall(r"[a-z_]+(?:\.[a-z_]+)?", text))
    missing = (set(catalog.operators) | set(catalog.procedures)) - words
    missing |= {"bool", "ordinal", "score", "label", "pointwise", "pairwise"} - words
    assert not missing
    assert re.search(r"\]\?|\}\?|bool\?", text), "no optional type"
    assert '"""' in text and "#" in text


# -- the examples in codes.toml ----------------------------------------------------

_HEADER = "rubric example { version = 1 }\n"
_NUMERIC = "ordinal[1, 5]"
# Output rules whose result is a bool, whatever the inputs.
_BOOL_RULES = {output_rules.boolean, output_rules.bool_reduce, output_rules.threshold}


def _type_text(t: ast.TypeExpr) -> str:
    if t.kind == "bool":
        return "bool"
    if t.kind == "label":
        return "label{" + ", ".join(n.value for n in t.labels) + "}"
    assert t.lo is not None and t.hi is not None
    return f"{t.kind}[{t.lo.text}, {t.hi.text}]"


def _contract_scale(module: ast.Module) -> str | None:
    for d in module.decls:
        if isinstance(d, ast.ContractDecl):
            for p in d.block.params:
                if p.name.value == "scale" and isinstance(p.value, ast.TypeExpr):
                    return _type_text(p.value)
    return None


def _refs(module: ast.Module) -> dict[str, str]:
    """Names a snippet reads but does not declare -> the type to declare them with."""
    catalog = load_catalog()
    declared = {d.name.value for d in module.decls if isinstance(d, (ast.CriterionDecl, ast.NodeDecl))}
    wanted: dict[str, str] = {}
    for d in module.decls:
        if isinstance(d, ast.NodeDecl):
            op = catalog.operators.get(d.operator.text)
            for port in d.ports:
                spec = op.port(port.name.value) if op else None
                kind = "bool" if spec and spec.accepts == ("bool",) else _NUMERIC
                for ref in port.refs:
                    wanted.setdefault(ref.value, kind)
        elif isinstance(d, ast.SinkDecl):
            wanted.setdefault(d.target.value, _contract_scale(module) or _NUMERIC)
    return {n: t for n, t in wanted.items() if n not in declared}


def _type_of(module: ast.Module, name: str, declare: dict[str, str]) -> str:
    """The declared or evident type of a node, enough to pick a contract for it."""
    for d in module.decls:
        if isinstance(d, ast.CriterionDecl) and d.name.value == name:
            return _type_text(d.type)
        if isinstance(d, ast.NodeDecl) and d.name.value == name:
            op = load_catalog().operators.get(d.operator.text)
            return "bool" if op and op.rule in _BOOL_RULES else _NUMERIC
    return declare.get(name, _NUMERIC)


def _criterion(name: str, type_text: str) -> str:
    # A recorded value can have any type and draws no warnings.
    return f'criterion {name}: {type_text} = recorded.value {{ key = "{name}" }}\n'


def complete(snippet: str, code: str, declare: dict[str, str]) -> str:
    """A snippet made into a whole file: the header, contract, referenced criteria,
    sink and readout it lacks, except the one whose absence the code is about."""
    module = parse(snippet, "snippet.rbg").module
    assert module is not None, f"{code}: snippet does not parse:\n{snippet}"
    kinds = {type(d) for d in module.decls}
    declare = dict(declare)
    names = [d.name.value for d in module.decls if isinstance(d, (ast.CriterionDecl, ast.NodeDecl))]
    sinks = [d.target.value for d in module.decls if isinstance(d, ast.SinkDecl)]
    sink = sinks[0] if sinks else names[-1] if names else next(iter(declare), "overall")
    if not names and sink not in declare:
        declare[sink] = _contract_scale(module) or _NUMERIC
    scale = _contract_scale(module) or _type_of(module, sink, declare).replace("ordinal", "score")
    parts = []
    if ast.RubricDecl not in kinds and code != "RB401":
        parts.append(_HEADER)
    if ast.ContractDecl not in kinds and code != "RB402":
        parts.append(f"contract {{ scale = {scale} }}\n")
    parts.extend(_criterion(n, t) for n, t in declare.items())
    parts.append(snippet.rstrip("\n") + "\n")
    if not sinks and code != "RB302":
        parts.append(f"sink {sink}\n")
    if ast.ReadoutDecl not in kinds and code != "RB405":
        parts.append(f"readout pointwise {{ output = {scale} }}\n")
    return "".join(parts)


def _example_codes():
    return [c for c in registry() if c not in SYNTAX_CODES]


@pytest.mark.parametrize("code", sorted(SYNTAX_CODES))
def test_wrong_syntax_example_fails_to_parse_with_its_code(code: str):
    info = registry()[code]
    assert code in {d.code for d in parse(info.wrong).diagnostics}
    assert parse(info.right).diagnostics == ()


@pytest.mark.parametrize("code", _example_codes())
def test_wrong_example_reports_its_code_and_right_example_does_not(code: str):
    info = registry()[code]
    # Names the `right` snippet relies on are declared for both, so that a name
    # only the `wrong` one misspells stays unknown.
    right_module = parse(info.right).module
    assert right_module is not None
    declare = _refs(right_module)
    wrong = complete(info.wrong, code, declare)
    right = complete(info.right, code, declare)
    wrong_codes = {d.code for d in check_source(wrong, "wrong.rbg").diagnostics}
    assert code in wrong_codes, f"the `wrong` example of {code} does not report it:\n{wrong}"
    right_diags = check_source(right, "right.rbg").diagnostics
    assert code not in {d.code for d in right_diags}, f"the `right` example of {code} reports it:\n{right}"
    errors = [d for d in right_diags if d.is_error]
    assert not errors, f"the `right` example of {code} has errors:\n{right}\n{render(errors)}"
