"""Judge-prompt perturbations, on the declared sections of a criterion's
prompt template (`## system`, `## user`, `## assistant`), never on matches of
our own wording: the same rules work on a user's template and on a built-in
one (whose file text is the starting point, and renders as the built-in).

A perturbed judge is the criterion with a new template text
(`Patch.apply`); its reply format and answer parsing stay the criterion's.
Each rule has a check written apart from it, and every rewrite (a rule's or
the generator's) must parse with the template engine and keep every
placeholder of the original.
"""

from __future__ import annotations

from rubriclang.checker.graph import Criterion
from rubriclang.llm import prompting
from rubriclang.template import Template, compose, paragraph_breaks, parse

# Placeholders that carry what is judged (or the question asked about it): a
# paragraph that shows one is material, never the reply-format instruction.
MATERIAL = frozenset({"input", "response", "response_a", "response_b", "reference", "rubric", "question"})


def template_of(text: str) -> Template:
    """A criterion's template text, parsed (the checker accepted it already)."""
    template, problems = parse(text, "audit")
    if template is None:  # a checked graph never gets here
        raise ValueError(f"the judge's template does not parse: {problems[0].message}")
    return template


def starting_text(criterion: Criterion) -> str:
    """The criterion's template as sections only (an author's comment, never
    sent, dropped): what the generator is shown and rewrites."""
    return compose(template_of(prompting.criterion_template_text(criterion)).sections)


def fixed_reply(criterion: Criterion) -> str | None:
    """Why the criterion's reply instructions may not be rewritten, or None:
    Prometheus models are trained on their prompt's exact reply format."""
    if prompting.template_choice(criterion) == "prometheus":
        return "its prompt is Prometheus's (`template = prometheus`), whose models are trained on its reply format"
    return None


def _last_user(template: Template) -> int:
    return max(i for i, role in enumerate(template.roles) if role == "user")


def paragraphs(text: str) -> list[str]:
    """A message's source text cut at the blank lines outside its sections."""
    cuts = [0, *[x for br in paragraph_breaks(text) for x in br], len(text)]
    return [text[a:b].strip("\n") for a, b in zip(cuts[::2], cuts[1::2], strict=True)]


# --- instruction ordering ----------------------------------------------------------


def format_first(criterion: Criterion, text: str) -> tuple[str | None, str | None]:
    """(the criterion's template `text` with its reply-format part first, or
    None; why not).

    The rule: the reply-format part is the last paragraph of the last `## user`
    message (so it is in the built-in templates), provided it shows none of
    the judged texts (MATERIAL); it moves to the front of that message."""
    why = fixed_reply(criterion)
    if why:
        return None, why
    template = template_of(text)
    sections = list(template.sections)
    i = _last_user(template)
    paras = paragraphs(sections[i][1])
    if len(paras) < 2:
        return None, "its last `## user` message is one paragraph: there is no reply-format part to move"
    shown = sorted(template_of(paras[-1]).names & MATERIAL)
    if shown:
        return (
            None,
            f"the last paragraph of its last `## user` message shows `{{{{{shown[0]}}}}}`: it is material, not a "
            "reply-format instruction",
        )
    sections[i] = ("user", "\n\n".join([paras[-1], *paras[:-1]]))
    return compose(sections), None


def check_format_first(original: str, variant: str) -> str | None:
    """None when `variant` is `original` with the last paragraph of its last
    user message moved to the front, and nothing else changed."""
    a, b = template_of(original), template_of(variant)
    if a.roles != b.roles:
        return "the sections changed"
    i = _last_user(a)
    if a.sections[:i] != b.sections[:i] or a.sections[i + 1 :] != b.sections[i + 1 :]:
        return "a message other than the last user message changed"
    old, new = paragraphs(a.sections[i][1]), paragraphs(b.sections[i][1])
    if new != [old[-1], *old[:-1]]:
        return "the last user message is not its own paragraphs with the last one first"
    return None


# --- anchor order --------------------------------------------------------------------


def reverse_points(criterion: Criterion, text: str) -> tuple[str | None, str | None]:
    """(the template listing the criterion's scale points or labels in the
    reverse order, written out where it showed `{{anchors}}` / `{{labels}}`,
    or None; why not)."""
    name, entries = prompting.listed_points(criterion)
    if name is None or name not in template_of(text).names:
        return None, "its prompt lists no scale points or labels (`{{anchors}}`, `{{labels}}`)"
    if len(entries) < 2:
        return (
            None,
            f"its prompt lists {len(entries)} {'scale point' if name == 'anchors' else 'label'}: there is no order to "
            "reverse",
        )
    return text.replace(f"{{{{{name}}}}}", "\n".join(reversed(entries))), None


def check_reversed(criterion: Criterion, original: str, variant: str) -> str | None:
    """None when `variant` shows the same lines as `original`, with the
    criterion's scale points (labels) in the reverse order."""
    _, entries = prompting.listed_points(criterion)
    b, problems = parse(variant, "variant")
    if b is None:
        return f"the reordered template does not parse: {problems[0].message}"
    a = template_of(original)
    if a.roles != b.roles:
        return "the sections changed"
    shown = {**{n: f"<{n}>" for n in a.names | b.names}, **prompting.rubric_values(criterion)}
    before, after = "\n".join(m["content"] for m in a.fill(shown)), "\n".join(m["content"] for m in b.fill(shown))
    if sorted(before.splitlines()) != sorted(after.splitlines()):
        return "the prompt's lines changed, not only their order"
    places = [after.find(e) for e in entries]
    if -1 in places or places != sorted(places, reverse=True):
        return "the scale points (labels) are not in the reverse order"
    return None


# --- rewrites --------------------------------------------------------------------------


def with_system(text: str, system: str) -> str:
    """The template with `system` as its system section (added first when it has none)."""
    sections = list(template_of(text).sections)
    if sections[0][0] == "system":
        sections[0] = ("system", system.strip())
    else:
        sections.insert(0, ("system", system.strip()))
    return compose(sections)


def system_text(text: str) -> str:
    """The template's system section ("" when it has none)."""
    return next((body for role, body in template_of(text).sections if role == "system"), "")


def check_rewrite(original: str, rewrite: str, roles: tuple[str, ...] | None = None) -> str | None:
    """None when `rewrite` is a template with the sections `roles` (default:
    the original's) and exactly the original's placeholders; else why not."""
    new, problems = parse(rewrite, "rewrite")
    if new is None:
        p = problems[0]
        return f"the rewrite is not a valid template ({p.line}:{p.column}: {p.message})"
    old = template_of(original)
    want = roles or old.roles
    if new.roles != want:
        return f"the rewrite has the sections {', '.join(new.roles)}, not {', '.join(want)}"
    lost, added = sorted(old.names - new.names), sorted(new.names - old.names)
    if lost:
        return "the rewrite drops " + ", ".join(f"`{{{{{n}}}}}`" for n in lost)
    if added:
        return "the rewrite adds " + ", ".join(f"`{{{{{n}}}}}`" for n in added) + ", which the original does not show"
    return None


def rubric_text(criterion: Criterion, graph_name: str) -> str:
    """The criterion as the generator sees it: what it judges and on what scale."""
    lines = [f"judge `{graph_name}`, criterion `{criterion.name}`: {criterion.type} by {criterion.procedure}"]
    for name, value in prompting.rubric_values(criterion).items():
        if value:
            lines.append(f"{name}:\n{value}" if "\n" in value else f"{name}: {value}")
    return "\n".join(lines)
