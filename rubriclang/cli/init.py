"""`rbg init [DIR]`: a starter project (docs/project.md): the project's
settings, a rule-only rubric that needs no model, a few items, an audit
suite for them (as `rbg audit init` writes it) and a `.gitignore` for the
output folders. Nothing is overwritten without --force."""

from __future__ import annotations

import os

import click

from rubriclang.cli.errors import DataError

CONFIG = """\
# The project's settings (docs/project.md). rbg finds this file upward from
# a rubric's folder, else from the current folder; the command line wins
# over every setting here.

[project]
runs = "runs"        # `rbg run RUBRIC ITEMS` without --out writes a new trace file here
audits = "audits"    # `rbg audit SUITE` without --out writes a new audit folder here
evals = "evals"      # `rbg view` lists the `rbg eval --format json` outputs saved here
cache = true         # the LLM call cache: true (your user cache), false (none), or a file path
concurrency = 8      # criterion calls in flight at once

[check]              # which warnings `rbg check` reports (codes or prefixes: `rbg explain --list`)
# select = ["RB"]
# ignore = ["RB504"]

# A model server for the LLM criteria; without one they are judged by the
# embedded local model (docs/local-model.md).
# [models.default]
# base_url = "http://localhost:8000/v1"
# model = "Qwen2.5-7B-Instruct"
# api_key_env = "OPENAI_API_KEY"   # the variable that holds the key, never the key

# Prices turn `--estimate` token counts into money (USD per million tokens).
# [prices."Qwen2.5-7B-Instruct"]
# prompt = 0.2
# completion = 0.6
"""

RUBRIC = """\
# A starter judge: is the response's final number the reference's, and is
# the response short? Rule criteria only, so `rbg run` needs no model and
# no key. docs/language.md describes the language.

rubric starter {
  version = 1
  description = "Does the response give the reference's number, without rambling?"
}

contract { scale = bool }

criterion correct: bool = rule.matches_reference { mode = numeric }

criterion rambling: bool = rule.length { over = 60 }

# An LLM criterion, judged by the embedded local model unless rubriclang.toml
# names a server: uncomment it and add `shows_work` to `good` below.
# criterion shows_work: bool = llm.check {
#   question = "Does the response show how it reached its answer?"
# }

node brief = transform.not(value: rambling)
node good = reduce.all(inputs: [correct, brief])

sink good

readout pointwise { output = bool }
"""

ITEMS = [
    ("q1", "What is 12 times 7?", "Twelve sevens make eighty-four. The answer is 84.", "84", True),
    (
        "q2",
        "A box holds 6 eggs. How many eggs are in 5 boxes?",
        "Five boxes of six eggs each. The answer is 30.",
        "30",
        True,
    ),
    ("q3", "What is 100 minus 37?", "Take thirty-seven from a hundred. The answer is 73.", "63", False),
    ("q4", "How many minutes are in 3 hours?", "An hour has sixty minutes. The answer is 180.", "180", True),
    ("q5", "What is half of 90?", "Halve ninety. The answer is 40.", "45", False),
]

GITIGNORE = """\
# rbg's outputs (rubriclang.toml [project]): traces, audits, saved evaluations
/runs/
/audits/
/evals/
*.lock
"""

FILES = ("rubriclang.toml", "rubric.rbg", "items.jsonl", "audit.toml", ".gitignore")


def _items_text() -> str:
    import json

    return "".join(
        json.dumps({"id": i, "input": q, "response": r, "reference": ref, "gold": gold}) + "\n"
        for i, q, r, ref, gold in ITEMS
    )


@click.command()
@click.argument("folder", default=".", metavar="[DIR]", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite the starter files that exist already.")
@click.pass_context
def init(ctx: click.Context, folder: str, force: bool) -> None:
    """Write a starter project into DIR (default: the current folder):
    rubriclang.toml (the project's settings), rubric.rbg (a rule-only
    judge: no model, no key), items.jsonl, audit.toml (an audit suite, as
    `rbg audit init` writes it) and a .gitignore for the output folders.
    Existing files are refused, by name, unless --force.
    """
    from rubriclang.cli.audit import init as audit_init
    from rubriclang.cli.outputs import command_output
    from rubriclang.safeio import describe_os_error, write_atomic

    paths = {name: name if folder == "." else os.path.join(folder, name) for name in FILES}
    present = [p for p in paths.values() if os.path.lexists(p)]
    if present and not force:
        names = ", ".join(f"`{p}`" for p in present)
        raise DataError(
            f"{names} exist{'s' if len(present) == 1 else ''} already\n  hint: give another DIR, or --force"
        )
    try:
        os.makedirs(folder, exist_ok=True)
        with command_output(folder, [], "DIR"):
            for name, text in (
                ("rubriclang.toml", CONFIG),
                ("rubric.rbg", RUBRIC),
                ("items.jsonl", _items_text()),
                (".gitignore", GITIGNORE),
            ):
                write_atomic(paths[name], text)
    except OSError as exc:
        raise DataError(f"cannot write `{exc.filename or folder}`: {describe_os_error(exc)}") from None
    # The suite as `rbg audit init` writes it: one writer of suites.
    ctx.invoke(
        audit_init, graph=paths["rubric.rbg"], items=paths["items.jsonl"], output=paths["audit.toml"], force=True
    )
    here = "" if os.path.abspath(folder) == os.getcwd() else f"cd {folder}\n  "
    click.echo(
        f"Started a project in {folder}: {', '.join(FILES)}\nNext:\n  {here}rbg check rubric.rbg\n"
        "  rbg run rubric.rbg items.jsonl\n  rbg eval rubric.rbg items.jsonl\n  rbg audit audit.toml\n  rbg view"
    )
