"""`Template.fill` renders each message from a body flattened once per
combination of its sections' truth (kept up to `_FLATS_KEPT` combinations,
flattened anew past them); a recursive walk of the parsed body, written
here, is what it must equal, on any template and any values."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang import template as template_module
from rubriclang.template import _Field, parse

NAMES = ["a", "b", "c", "input", "response"]


@st.composite
def bodies(draw, depth: int = 0) -> str:
    """Well-formed template text: text, fields and nested sections."""
    parts = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["text", "field", "section"] if depth < 3 else ["text", "field"]))
        if kind == "text":
            parts.append(draw(st.sampled_from(["x", " ", "\n", "Hello, ", "{ }", "\n\nend", "é"])))
        elif kind == "field":
            parts.append("{{" + draw(st.sampled_from(NAMES)) + "}}" + draw(st.sampled_from(["", "\n"])))
        else:
            name, mark = draw(st.sampled_from(NAMES)), draw(st.sampled_from("#^"))
            parts.append("{{" + mark + name + "}}" + draw(bodies(depth + 1)) + "{{/" + name + "}}")
    return "".join(parts)


values_st = st.dictionaries(st.sampled_from(NAMES), st.sampled_from(["", "v", "{{a}}", " two\nlines ", "## user"]))


def _walk(body: tuple, values: dict[str, str]) -> str:
    """A message body rendered part by part: text as is, a field's value,
    a section's body where its value's truth (inverted for `^`) holds."""
    out = []
    for part in body:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, _Field):
            out.append(values[part.name])
        elif bool(values.get(part.name)) != part.inverted:
            out.append(_walk(part.body, values))
    return "".join(out)


def _reference(template, values):
    return tuple({"role": m.role, "content": _walk(m.body, values).strip()} for m in template.messages)


@settings(max_examples=300, deadline=None)
@given(system=bodies(), user=bodies(), values=st.lists(values_st, min_size=1, max_size=6))
def test_fill_equals_the_recursive_walk_of_the_body(system, user, values):
    template, problems = parse(f"## system\nJudge. {system}\n## user\nShow: {user}\n", "t")
    assert template is not None, problems
    for v in values:  # one template, many values: flattened bodies are reused across fills
        full = {name: v.get(name, "") for name in NAMES}
        assert template.fill(full) == _reference(template, full)
        # A section whose name has no value counts as empty, in both.
        fields = {name: full[name] for name in NAMES if name in v or "{{" + name + "}}" in system + user}
        assert template.fill(fields) == _reference(template, fields)


def test_past_the_combinations_kept_each_fill_is_flattened_anew_and_none_is_kept(monkeypatch):
    monkeypatch.setattr(template_module, "_FLATS_KEPT", 1)
    template, _ = parse("## user\n{{#a}}A {{a}}{{/a}}{{^b}}no b{{/b}} {{response}}\n", "t")
    assert template is not None
    first = template.fill({"a": "1", "b": "", "response": "r"})
    second = template.fill({"a": "", "b": "2", "response": "r"})
    assert first == ({"role": "user", "content": "A 1no b r"},)
    assert second == ({"role": "user", "content": "r"},)
    assert len(template.messages[0].flats) == 1
