"""The compile loop: ask, check, feed the findings back, up to a budget
(the one ask-read-re-ask loop, `rubriclang.llm.reask`).

Each attempt's answer becomes a program (extracted from a fenced block, or
printed from JSON IR in constrained mode), which must pass the checker and
meet the spec's contract. The first program that does is formatted and
written atomically; when the budget runs out nothing is written. Either way
every attempt is logged.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import attrs

from rubriclang.catalog import Catalog, load_catalog
from rubriclang.checker import CheckedGraph, check_source
from rubriclang.checker.graph import PairwiseReadout, PointwiseReadout
from rubriclang.diagnostics import Diagnostic, sorted_diagnostics
from rubriclang.diagnostics.render import render
from rubriclang.fmt import format_source
from rubriclang.llm.cache import CallCache
from rubriclang.llm.calls import Caller, Usage
from rubriclang.llm.client import ChatClient, ChatRequest, Completion, Sampling
from rubriclang.llm.compiler import ir as irmod
from rubriclang.llm.compiler.log import CompileLog
from rubriclang.llm.compiler.prompt import messages, repair_message, spec_message, system_message
from rubriclang.llm.compiler.spec import Spec
from rubriclang.llm.reask import ask_until_read
from rubriclang.safeio import write_atomic

# Deterministic by default; room for a decomposed rubric's program.
DEFAULT_SAMPLING = Sampling(temperature=0.0, max_tokens=2048, seed=0)

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)


@attrs.frozen
class Attempt:
    """One answer of the model and what became of it."""

    number: int
    answer: str
    program: str | None  # the source that was checked; None when there was none
    ir: Any  # the decoded JSON answer in constrained mode, else None
    diagnostics: tuple[Diagnostic, ...]
    problems: tuple[str, ...]  # findings outside the checker (no program, bad IR, contract)
    completion: Completion

    @property
    def accepted(self) -> bool:
        return self.program is not None and not self.problems and not any(d.is_error for d in self.diagnostics)


@attrs.frozen
class CompileResult:
    """The formatted program and its graph (None when compilation failed) and
    every attempt."""

    source: str | None
    graph: CheckedGraph | None
    attempts: tuple[Attempt, ...]

    @property
    def ok(self) -> bool:
        return self.source is not None


async def compile_rubric(
    spec: Spec,
    client: ChatClient,
    *,
    repairs: int = 3,
    constrained: bool = False,
    sampling: Sampling = DEFAULT_SAMPLING,
    cache: CallCache | None = None,
    log: CompileLog | None = None,
    out: str | None = None,
    catalog: Catalog | None = None,
    header: str = "",
    within: str | None = None,
    usage: Usage | None = None,
) -> CompileResult:
    """Compile `spec` with the model behind `client` (an OpenAIClient or
    anything with `chat`, `model` and `identity`).

    There is no parameter for candidate responses: compilation never sees
    them. At most `1 + repairs` calls are made. With `out`, the accepted
    program is written there atomically; nothing is written on failure.
    `header` (comment lines) goes before the written program; `within`,
    the folder `out` must stay in (`safeio.write_atomic`). With `usage`,
    the calls made and their tokens are tallied there too, whatever the outcome.
    Raises LLMError when a call fails for good (after the client's retries).
    """
    catalog = catalog or load_catalog()
    # Findings name the program by the rubric, not by where it will be
    # written, so the same spec makes the same requests (and cache keys).
    path = f"{spec.name}.rbg"
    system = system_message(catalog, constrained)
    spec_text = spec_message(spec)
    fmt = irmod.response_format(catalog) if constrained else None
    _log(
        log,
        "start",
        name=spec.name,
        model=client.model,
        server=client.identity,
        constrained=constrained,
        repairs=repairs,
        sampling=sampling.body(),
        system=system,
        spec=spec_text,
    )
    attempts: list[Attempt] = []
    caller = Caller(client, cache)
    if usage is not None:
        caller.usage = usage  # the command's tally, shared by the specs it compiles
    request = ChatRequest(messages(system, spec_text), sampling, fmt)
    # Each request's call key as it is before the call (which may learn the model).
    keys = [caller.key(request)]

    def read(_: ChatRequest, completion: Completion) -> tuple[Attempt, str | None]:
        attempt = _attempt(len(attempts) + 1, completion, spec, catalog, constrained, path)
        attempts.append(attempt)
        repair = (
            None
            if attempt.accepted
            else repair_message(_findings(attempt, path), attempt.program if constrained else None)
        )
        _log(log, "attempt", **_attempt_record(attempt, keys[-1], repair))
        return attempt, repair

    def again(_: ChatRequest, answer: str, repair: str) -> ChatRequest:
        following = ChatRequest(messages(system, spec_text, (answer, repair)), sampling, fmt)
        keys.append(caller.key(following))
        return following

    outcome = await ask_until_read(caller, request, read, again, repairs + 1)
    if outcome.failure is not None:
        _log(log, "end", outcome="error", attempts=len(attempts), output=None, message=outcome.failure.message)
        raise outcome.failure
    if outcome.problem is not None:
        _log(
            log,
            "end",
            outcome="failed",
            attempts=len(attempts),
            output=None,
            message=f"no program passed the checker in {len(attempts)} attempt(s)",
        )
        return CompileResult(None, None, tuple(attempts))
    assert outcome.value is not None and outcome.value.program is not None  # an accepted attempt has a program
    formatted = format_source(outcome.value.program, path).output
    assert formatted is not None  # an accepted program parses
    source = header + formatted
    graph = check_source(source, path).graph
    if out is not None:
        try:
            os.makedirs(os.path.dirname(os.path.realpath(out)), exist_ok=True)
            write_atomic(out, source, within=within)
        except OSError as exc:
            _log(
                log,
                "end",
                outcome="error",
                attempts=outcome.tries,
                output=None,
                message=f"cannot write {out}: {exc.strerror}",
            )
            raise
    _log(log, "end", outcome="compiled", attempts=outcome.tries, output=out, message=None)
    return CompileResult(source, graph, tuple(attempts))


def _attempt(
    number: int, completion: Completion, spec: Spec, catalog: Catalog, constrained: bool, path: str
) -> Attempt:
    answer = completion.text
    problems: list[str] = []
    ir = None
    if constrained:
        ir, program, problems = _from_ir(answer, catalog)
    else:
        program = extract_program(answer)
        if program is None:
            problems.append("the answer holds no program: answer with the whole program in one ```rbg block")
    if completion.finish_reason == "length":
        problems.append("the answer was cut off at the token limit: write a shorter program")
    if program is None:
        return Attempt(number, answer, None, ir, (), tuple(problems), completion)
    result = check_source(program, path)
    if result.graph is not None:
        problems.extend(contract_problems(result.graph, spec))
    return Attempt(
        number, answer, program, ir, tuple(sorted_diagnostics(result.diagnostics)), tuple(problems), completion
    )


def extract_program(answer: str) -> str | None:
    """The program in an answer: the first ```rbg block, else the first fenced
    block, else the whole answer. None when there is nothing."""
    blocks = _FENCE.findall(answer)
    chosen = next((body for lang, body in blocks if lang.lower() in ("rbg", "rubric")), None)
    if chosen is None and blocks:
        chosen = blocks[0][1]
    text = (chosen if chosen is not None else answer).strip("\n")
    return text + "\n" if text.strip() else None


def _from_ir(answer: str, catalog: Catalog) -> tuple[Any, str | None, list[str]]:
    text = answer.strip()
    fenced = _FENCE.findall(text)
    if fenced:
        text = fenced[0][1]
    try:
        ir = irmod.decode_json(text)
    except ValueError as exc:
        return None, None, [f"the answer is not valid JSON: {exc}"]
    problems = irmod.validate_ir(ir, catalog)
    if problems:
        return ir, None, ["the JSON does not fit the IR schema: " + p for p in problems]
    # In the canonical layout, which the model is shown (and which is checked).
    return ir, irmod.print_ir(ir, catalog), []


def contract_problems(graph: CheckedGraph, spec: Spec) -> list[str]:
    """How a well-typed graph misses the spec: its name, version, contract
    and readouts are fixed by the spec, and a reference answer may only be
    read when items carry one."""
    out = []
    if graph.name != spec.name:
        out.append(f"the rubric must be named `{spec.name}` (`rubric {spec.name} {{ ... }}`), not `{graph.name}`")
    if graph.header.get("version") != spec.version:
        out.append(f"the header must say `version = {spec.version}`")
    if graph.scale != spec.scale:
        out.append(f"the contract must be `contract {{ scale = {spec.scale} }}`, not `scale = {graph.scale}`")
    if set(graph.readouts) != set(spec.readouts):
        out.append("the readouts must be exactly: " + ", ".join(f"`readout {r}`" for r in spec.readouts))
    point = graph.readouts.get("pointwise")
    assert point is None or isinstance(point, PointwiseReadout)
    if point is not None and spec.output is not None and point.output != spec.output:
        out.append(f"the pointwise readout must say `output = {spec.output}`, not `output = {point.output}`")
    pair = graph.readouts.get("pairwise")
    assert pair is None or isinstance(pair, PairwiseReadout)
    if pair is not None and spec.epsilon is not None and pair.epsilon != spec.epsilon:
        out.append(f"the pairwise readout must say `epsilon = {spec.epsilon}`")
    if pair is not None and spec.resolve is not None and pair.resolve != spec.resolve:
        out.append(f"the pairwise readout must say `resolve = {spec.resolve}`")
    if not spec.reference_at_run_time:
        for c in graph.criteria:
            hooks = load_catalog().hooks(c.procedure)
            reads_reference = "reads_reference" in hooks.traits or "reference" in hooks.fields_named(c.params)
            if c.params.get("with_reference") or reads_reference:
                out.append(f"criterion `{c.name}` reads the item's reference answer, but items will carry none")
    return out


def _findings(attempt: Attempt, path: str) -> str:
    errors = [d for d in attempt.diagnostics if d.is_error]
    text = render("text", errors, sources={path: attempt.program or ""}) if errors else ""
    return text + "".join(f"error: {p}\n" for p in attempt.problems)


def _attempt_record(attempt: Attempt, key: str, repair: str | None) -> dict[str, Any]:
    c = attempt.completion
    return {
        "attempt": attempt.number,
        "request": key,
        "answer": attempt.answer,
        "ir": attempt.ir,
        "program": attempt.program,
        "diagnostics": json.loads(render("json", attempt.diagnostics)),
        "problems": list(attempt.problems),
        "accepted": attempt.accepted,
        "repair": repair,
        "model": c.model,
        "cached": c.cached,
        "finish_reason": c.finish_reason,
        "latency_ms": c.latency_ms,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
    }


def _log(log: CompileLog | None, event: str, **fields: object) -> None:
    if log is not None:
        log.write(event, **fields)
