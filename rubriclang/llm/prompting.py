"""Rendering an LLM criterion's prompt for one candidate (or, for
`llm.compare`, for both candidates in one presentation order).

A criterion's prompt is its own template (`prompt = ...`, checked by the
checker) or the built-in one of its procedure. The built-in wording lives in
versioned template files (`prompts/rate.v1.md`, ...), never in code: a prompt
change is a new file, so old traces keep naming the prompt they were made
with. Both kinds are filled by the one template engine (`rubriclang.template`),
with the values the catalog lists as the procedure's `placeholders`; values
are inserted in one pass, so a response that contains `{{...}}` or `## user`
is shown as written.

A criterion that reads a JSON answer (the default) asks for structured
output too (a JSON schema built from its type), and the built-in prompts ask
for the same JSON in words, so a server without structured output still gets
a parseable answer. A criterion that reads its answer with a pattern, and
`llm.rate { template = prometheus }`, ask for none.
"""

from __future__ import annotations

import functools
import hashlib

import attrs

from rubriclang.canonical import canonical_json
from rubriclang.catalog import load_catalog
from rubriclang.catalog.types import JType, fmt_num
from rubriclang.checker.graph import Criterion
from rubriclang.interp.items import Item
from rubriclang.items.values import ListValue
from rubriclang.llm.client import ChatRequest, Sampling, messages_json
from rubriclang.memo import IdentityMemo
from rubriclang.template import (
    Template,
    TemplateError,
    fill_digest,
    load_packaged,
    packaged_text,
    parse,
)

# `llm.compare { reply = ratings }`: one rating per response in one reply.
COMPARE_RATINGS = "compare_ratings.v2"
# The built-in templates whose replies give the answer before the reason,
# with the reason at most REASON_MAX_CHARS long (version 2 on): a server that
# constrains its reply to the schema then reaches the answer, and stops soon
# after it, whatever the reply's token limit. Version 1 and a criterion's own
# template keep the schema they were written for: reason first, unbounded.
ANSWER_FIRST = frozenset({"rate@v2", "check@v2", "choose@v2", "compare@v2", "compare_ratings@v2"})
REASON_MAX_CHARS = 200
NUDGE = "nudge.v1"
PATTERN_NUDGE = "nudge_pattern.v1"  # after a reply an answer pattern cannot read

# A group's prompt (`group NAME = [...]`, one call answers every member) and
# the note sent after a reply that left some members unanswered. Version 2
# puts the criteria before the candidate, so a server's prompt cache holds
# them from item to item.
GROUP = ("group.v2", "group_nudge.v1")
GROUP_SCHEMA_NAME = "llm_group"
# A group's one reason is bounded tighter than a criterion's: its answers
# already cost a field each, and a small model fills whatever bound it is
# given (SmolLM2-135M wrote 200 of 200 characters, ~45 of its ~100 tokens).
GROUP_REASON_MAX_CHARS = 100

# `llm.rate { template = prometheus }`: Prometheus's own prompt, whose reply
# is in Prometheus's format (read by `parsing`), so it asks for no structured
# output. (template file, the note sent after an unreadable reply)
PROMETHEUS = ("prometheus.v1", "prometheus_nudge.v1")


class PromptError(ValueError):
    """The item lacks something the criterion's prompt needs (a reference)."""


@attrs.frozen
class Rendered:
    """A criterion's request for one candidate (or, for `llm.compare`, one
    presentation order), with the sampling and affinity `Prompt.render` was
    given (by default, placeholders)."""

    request: ChatRequest
    prompt_hash: str
    template: str
    nudge: str = NUDGE  # the template of the note sent after an unreadable reply


@functools.cache
def load_template(stem: str) -> Template:
    """A template from the package's `prompts/` folder, e.g. `rate.v1`."""
    return load_packaged("rubriclang.llm", stem)


@functools.lru_cache(maxsize=256)
def user_template(text: str) -> Template:
    """A criterion's own template (checked already by the checker), named by
    a hash of its text so traces tell template versions apart."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    template, problems = parse(text, f"user@{digest}")
    if template is None:  # the checker reports these; reaching here is a bug
        raise TemplateError(problems)
    return template


def criterion_template(criterion: Criterion) -> Template:
    """The template a criterion's prompt is rendered from: its own, or the
    built-in one of its procedure."""
    if criterion.prompt is not None:
        return user_template(criterion.prompt.text)
    return load_template(_builtin_stem(criterion))


def criterion_template_text(criterion: Criterion) -> str:
    """The text of `criterion_template`: a criterion's own template, or the
    built-in template file's. The audit rewrites this text to perturb the
    judge's prompt; as it is, it renders the same messages."""
    if criterion.prompt is not None:
        return criterion.prompt.text
    return packaged_text("rubriclang.llm", _builtin_stem(criterion))


def _builtin_stem(criterion: Criterion) -> str:
    if template_choice(criterion) == "prometheus":
        return PROMETHEUS[0]
    if side_by_side(criterion) and criterion.params.get("reply") == "ratings":
        return COMPARE_RATINGS
    return builtin_prompt(criterion.procedure)[0]


def builtin_prompt(procedure: str) -> tuple[str, str]:
    """The procedure's built-in template file and the key of the answer in
    the reply's JSON: its catalog entry's `prompt` (moving a procedure to a
    new template version is a deliberate edit there)."""
    prompt = load_catalog().hooks(procedure).prompt
    if prompt is None:  # the checker lets no such criterion reach a prompt
        raise PromptError(f"`{procedure}` has no built-in prompt")
    return prompt


def side_by_side(criterion: Criterion) -> bool:
    """Whether the criterion's procedure sees both candidates in one prompt."""
    return "side_by_side" in load_catalog().hooks(criterion.procedure).traits


def template_choice(criterion: Criterion) -> str:
    """The criterion's built-in prompt: its `template` parameter (`default`
    or `prometheus`; only `llm.rate` has the parameter, so others are `default`)."""
    return criterion.params.get("template") or "default"


def answer_key(procedure: str) -> str:
    """The field of the reply's JSON that holds the answer."""
    return builtin_prompt(procedure)[1]


def compare_keys(criterion: Criterion) -> tuple[str, ...]:
    """`llm.compare`: the JSON fields of its answer, in presentation order."""
    return ("score_a", "score_b") if criterion.params.get("reply") == "ratings" else ("preference",)


def scale_phrase(t: JType) -> str:
    """The declared scale in words, e.g. `an integer from 1 to 5`."""
    what = "an integer" if t.kind == "ordinal" else "a number"
    return f"{what} from {fmt_num(t.lo)} to {fmt_num(t.hi)}"


def answer_schema(criterion: Criterion) -> dict:
    """The JSON Schema of the answer value, from the criterion's type."""
    t = criterion.type
    if t.kind == "bool":
        return {"type": "boolean"}
    if t.kind == "label":
        return {"type": "string", "enum": list(t.labels)}
    kind = "integer" if t.kind == "ordinal" else "number"
    return {"type": kind, "minimum": t.lo, "maximum": t.hi}


def response_format(criterion: Criterion) -> dict | None:
    """The structured-output request: `{KEY: answer, "reason": ...}` with a
    bounded reason for the built-in templates in ANSWER_FIRST, else
    `{"reason": ..., KEY: answer}` (the layout the template asks for in
    words). None when the criterion reads its answer with a pattern (or uses
    Prometheus's prompt): the reply is then free text."""
    if criterion.params.get("answer", "json") != "json" or template_choice(criterion) == "prometheus":
        return None
    if side_by_side(criterion):
        keys = compare_keys(criterion)
        value = {"type": "string", "enum": ["A", "B", "tie"]} if keys == ("preference",) else answer_schema(criterion)
        props = {k: value for k in keys}
    else:
        keys = (answer_key(criterion.procedure),)
        props = {keys[0]: answer_schema(criterion)}
    built_in = criterion_template(criterion).id if criterion.prompt is None else criterion.prompt.rewritten_from
    if built_in in ANSWER_FIRST:
        properties = {**props, "reason": {"type": "string", "maxLength": REASON_MAX_CHARS}}
        required = [*keys, "reason"]
    else:
        properties = {"reason": {"type": "string"}, **props}
        required = ["reason", *keys]
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {
        "type": "json_schema",
        "json_schema": {"name": criterion.procedure.replace(".", "_"), "strict": True, "schema": schema},
    }


def _reference(criterion: Criterion, item: Item) -> str:
    """The reference answer to show: none unless `with_reference = true`."""
    if not criterion.params.get("with_reference"):
        return ""
    if not item.reference:
        raise PromptError("the item has no `reference` to show the judge (the criterion sets `with_reference = true`)")
    return item.reference


def _values(
    criterion: Criterion, item: Item, shown: tuple[str, ...], own: dict[str, str], compare: bool
) -> dict[str, str]:
    """Every value the criterion's procedure can show (the catalog's
    `placeholders`); `shown` is the candidate, or for `llm.compare` both
    candidates in presentation order; `own` is `rubric_values(criterion)`;
    `compare`: `side_by_side(criterion)`. The declared item fields the
    criterion reads (`Criterion.item_fields`) are shown too."""
    values = {
        "input": item.input,
        "reference": _reference(criterion, item),
        "rubric": (item.rubric or "").strip(),
        **own,
    }
    if compare:
        values["response_a"], values["response_b"] = (item.candidates[c] for c in shown)
    else:
        values["response"] = item.candidates[shown[0]]
    if criterion.item_fields:
        _declared_values(criterion, item, shown, compare, values)
    return values


def _declared_values(criterion: Criterion, item: Item, shown: tuple[str, ...], compare: bool, values: dict) -> None:
    """The values of the declared fields the criterion reads that are not
    plain text items have always had: each field's default rendering, with
    the elements a section over it iterates."""
    from rubriclang.items.render import template_value

    for spec in criterion.item_fields:
        if spec.name not in item.fields and not spec.optional:  # an item not read for this rubric's shape
            raise PromptError(f"the item's `{spec.name}` was not read as the rubric declares it (`{spec.type_text}`)")
        if spec.name == "response":
            names = ("response_a", "response_b") if compare else ("response",)
            for name, cid in zip(names, shown, strict=True):
                values[name] = template_value(spec, item.fields["response"][cid])
        else:
            values[spec.name] = template_value(spec, item.fields.get(spec.name))


def rubric_values(criterion: Criterion) -> dict[str, str]:
    """The values a prompt shows that come from the criterion itself, not
    from the item: its question, scale and anchors, or labels."""
    t = criterion.type
    values = {"question": (criterion.params.get("question") or "").strip()}
    listed, entries = listed_points(criterion)
    if t.numeric:
        values["scale"] = scale_phrase(t)
    elif t.kind == "label":
        values["label_names"] = ", ".join(t.labels)
    if listed:
        values[listed] = "\n".join(entries)
    return values


def listed_points(criterion: Criterion) -> tuple[str | None, list[str]]:
    """(placeholder, entries): the scale's anchors (`anchors`, `k: text`
    from the bottom up) or the labels (`labels`, `- label: description`)
    as a prompt lists them, one entry each; (None, []) for other types."""
    p = criterion.params
    t = criterion.type
    if t.numeric:
        return "anchors", [f"{fmt_num(k)}: {v}" for k, v in sorted((p.get("anchors") or {}).items())]
    if t.kind == "label":
        desc = p.get("descriptions") or {}
        return "labels", [f"- {lab}: {desc[lab]}" if desc.get(lab) else f"- {lab}" for lab in t.labels]
    return None, []


def prometheus_rubric(criterion: Criterion, item: Item) -> str:
    """The score rubric Prometheus is shown: the item's own `rubric`, else
    one in Prometheus's form built from the criterion, `[question]` then a
    `Score k: anchor` line per anchor. Wrapped lines are joined, since
    Prometheus's rubrics give each part one line."""
    if item.rubric and item.rubric.strip():
        return item.rubric.strip()
    p = criterion.params
    lines = [f"[{_one_line(p['question'])}]"]
    lines += [f"Score {fmt_num(k)}: {_one_line(v)}" for k, v in sorted((p.get("anchors") or {}).items())]
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())


@attrs.frozen
class _Fixed:
    """What a criterion's requests share, whatever the item: worked out once."""

    template: Template
    response_format: dict | None
    rubric_values: dict[str, str]
    nudge: str
    prometheus: bool
    names: tuple[str, ...]  # the values the template shows, sorted
    head: tuple[str, ...]  # what a prompt's digest begins with: `fill_digest(template)`, the id's length, the id
    compare: bool  # `side_by_side(criterion)`


_FIXED: IdentityMemo[_Fixed] = IdentityMemo(1024)  # each criterion's _Fixed


def _fixed(criterion: Criterion) -> _Fixed:
    hit = _FIXED.get(id(criterion), criterion)
    if hit is not None:
        return hit
    prometheus = template_choice(criterion) == "prometheus"
    nudge_stem = NUDGE
    # `template = prometheus` (never beside `prompt` in a `.rbg` file: RB203)
    # keeps Prometheus's rubric and reply format under an audit's rewrite of its text.
    if prometheus:
        nudge_stem = PROMETHEUS[1]
    elif criterion.params.get("answer", "json") != "json":
        nudge_stem = PATTERN_NUDGE  # the template asked for its own format, not JSON
    template = criterion_template(criterion)
    fixed = _Fixed(
        template,
        response_format(criterion),
        rubric_values(criterion),
        nudge_stem,
        prometheus,
        tuple(sorted(template.names)),
        (fill_digest(template), str(len(template.id)), template.id),
        side_by_side(criterion),
    )
    return _FIXED.put(id(criterion), criterion, fixed)


_PLACEHOLDER = Sampling()  # the sampling of a request rendered for no run in particular


@attrs.frozen
class Prompt:
    """A criterion's request for one candidate (or one presentation order)
    before it is rendered: the template and the values that fill it.
    Rendering is a pure function of the two, so `digest`, a SHA-256 of the
    template's `fill_digest` and id and of each value the template shows,
    stands for the rendered messages in a call key (`ChatRequest.prompt_digest`):
    a cache hit needs no rendering. (The id renders nothing, but the prompt
    hash cached with the call names it.)"""

    template: Template
    values: dict[str, str] = attrs.field(eq=False)  # `digest` compares them
    digest: str
    response_format: dict | None
    nudge: str

    def render(self, sampling: Sampling = _PLACEHOLDER, affinity: str | None = None) -> Rendered:
        """The request itself, asked with `sampling` (by default a
        placeholder, as `Rendered` says) and `affinity`."""
        messages = self.template.fill(self.values)
        hashed = prompt_hash(self.template.id, messages)
        request = ChatRequest(messages, sampling, self.response_format, affinity, self.digest, hashed)
        return Rendered(request, hashed, self.template.id, self.nudge)


def prepare(criterion: Criterion, item: Item, shown: str | tuple[str, ...]) -> Prompt:
    """The prompt judging `shown` of `item` on `criterion`: one candidate
    id, or for `llm.compare` both ids in the order the judge sees them.
    Raises PromptError when the item lacks what the prompt needs."""
    shown = (shown,) if isinstance(shown, str) else tuple(shown)
    fixed = _fixed(criterion)
    values = _values(criterion, item, shown, fixed.rubric_values, fixed.compare)
    if fixed.prometheus:
        values["rubric"] = prometheus_rubric(criterion, item)
    # The template's fill digest and id (which the prompt hash, cached with the call, names),
    # then each shown value as name, length, text: no two sets of values give one text.
    parts = list(fixed.head)
    for name in fixed.names:
        value = values.get(name)
        if value is None:  # a list element's value (`{{id}}`), in its list's elements below
            continue
        parts += (name, str(len(value)), value)
        if type(value) is ListValue:  # a list field: what its sections show of each element too
            elements = canonical_json(value.elements)
            parts += (str(len(elements)), elements)
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
    return Prompt(fixed.template, values, digest, fixed.response_format, fixed.nudge)


def render(criterion: Criterion, item: Item, shown: str | tuple[str, ...]) -> Rendered:
    """`prepare(...).render()`: the request judging `shown` of `item` on
    `criterion`. Raises PromptError when the item lacks what the prompt needs."""
    return prepare(criterion, item, shown).render()


def prompt_hash(template_id: str, messages: tuple[dict, ...]) -> str:
    """A short content hash of what the judge is shown (not of the sampling
    or the response format, which the trace records elsewhere)."""
    # canonical_json({"template": ..., "messages": ...}), assembled ("messages" sorts first)
    blob = '{"messages":' + messages_json(messages) + ',"template":' + _quoted(template_id) + "}"
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


_quoted = functools.lru_cache(maxsize=256)(canonical_json)  # a template id's JSON, per call


def nudge(request: ChatRequest, reply: str, problem: str, stem: str = NUDGE) -> ChatRequest:
    """The request again, after the unreadable `reply` and a note (template
    `stem`, `Rendered.nudge`) saying what was wrong with it: a different
    request, so never the same cached answer: it is keyed by its messages,
    not by the prompt it began with)."""
    follow_up = load_template(stem).fill({"problem": problem})
    turn = ({"role": "assistant", "content": reply}, *follow_up)
    return attrs.evolve(request, messages=request.messages + turn, prompt_digest=None, prompt_hash=None)


# -- groups: several criteria answered in one call -----------------------------


def _answer_words(criterion: Criterion) -> str:
    """The form of one criterion's answer in words: its scale, `true or
    false`, or its labels."""
    t = criterion.type
    if t.numeric:
        return scale_phrase(t)
    if t.kind == "bool":
        return "true or false"
    return "one of " + ", ".join(f'"{lab}"' for lab in t.labels)


def group_form(members: tuple[Criterion, ...]) -> str:
    """The JSON object a group's reply takes, in words: each member's answer
    under its name, then the reason."""
    fields = [f'"{m.name}": <{_answer_words(m)}>' for m in members]
    return "{" + ", ".join([*fields, '"reason": "<one short sentence>"']) + "}"


def _criteria_text(members: tuple[Criterion, ...]) -> str:
    """Each member as the group's prompt lists it: its name and question,
    the form of its answer (true for yes with a yes/no question), then its
    anchors or labels, one a line."""
    blocks = []
    for m in members:
        values = rubric_values(m)
        lines = [f"`{m.name}`: {values['question']}"]
        answer = _answer_words(m)
        lines.append(f"Answer: {answer}{', true for yes' if m.type.kind == 'bool' else ''}.")
        _, entries = listed_points(m)
        if m.type.kind != "label" or m.params.get("descriptions"):  # bare labels are in the answer's line already
            lines += entries
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def group_response_format(members: tuple[Criterion, ...]) -> dict:
    """The structured-output request of a group's call: one property per
    member (named after it, typed as its answer), then a reason of at most
    GROUP_REASON_MAX_CHARS, all required, in that order."""
    properties: dict = {m.name: answer_schema(m) for m in members}
    properties["reason"] = {"type": "string", "maxLength": GROUP_REASON_MAX_CHARS}
    schema = {
        "type": "object",
        "properties": properties,
        "required": [*(m.name for m in members), "reason"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": GROUP_SCHEMA_NAME, "strict": True, "schema": schema}}


@attrs.frozen
class _GroupFixed:
    template: Template
    response_format: dict
    own: dict[str, str]  # `criteria` and `form`
    names: tuple[str, ...]
    head: tuple[str, ...]


# Each group's _GroupFixed, by its members' identities (kept alive beside it).
_GROUP_FIXED: dict[tuple[int, ...], tuple[tuple[Criterion, ...], _GroupFixed]] = {}


def _group_fixed(members: tuple[Criterion, ...]) -> _GroupFixed:
    key = tuple(map(id, members))
    hit = _GROUP_FIXED.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], members, strict=True)):
        return hit[1]
    template = load_template(GROUP[0])
    fixed = _GroupFixed(
        template,
        group_response_format(members),
        {"criteria": _criteria_text(members), "form": group_form(members)},
        tuple(sorted(template.names)),
        (fill_digest(template), str(len(template.id)), template.id),
    )
    if len(_GROUP_FIXED) >= 256:
        _GROUP_FIXED.clear()
    _GROUP_FIXED[key] = (members, fixed)
    return fixed


def prepare_group(members: tuple[Criterion, ...], item: Item, candidate: str) -> Prompt:
    """The one prompt judging `candidate` of `item` on every member of a
    group, in the group's order. The members share what they show (the
    checker's RB702), so the first one's material stands for all. Raises
    PromptError when the item lacks what the prompt needs."""
    own = [m.name for m in members if m.prompt is not None]
    if own:  # the checker refuses these (RB701); an audit's rewrite of one member's prompt reaches here
        raise PromptError(
            f"grouped criteria are asked with their group's prompt, not their own: {', '.join(own)} has one"
        )
    fixed = _group_fixed(members)
    values = _values(members[0], item, (candidate,), fixed.own, False)
    parts = list(fixed.head)
    for name in fixed.names:
        value = values.get(name)
        if value is None:
            continue
        parts += (name, str(len(value)), value)
        if type(value) is ListValue:
            elements = canonical_json(value.elements)
            parts += (str(len(elements)), elements)
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
    return Prompt(fixed.template, values, digest, fixed.response_format, GROUP[1])


def group_nudge(request: ChatRequest, reply: str, problem: str, missing: tuple[Criterion, ...]) -> ChatRequest:
    """The group's request again, after `reply` and a note saying what was
    wrong, asking only for the `missing` members (and keyed by its messages,
    as every follow-up is): its structured output holds just those."""
    follow_up = load_template(GROUP[1]).fill({"problem": problem, "form": group_form(missing)})
    turn = ({"role": "assistant", "content": reply}, *follow_up)
    response_format = None if request.response_format is None else group_response_format(missing)
    return attrs.evolve(
        request,
        messages=request.messages + turn,
        response_format=response_format,
        prompt_digest=None,
        prompt_hash=None,
    )
