"""An audit from start to end: items -> applicable operators -> variants,
validated and sealed (or a sealed suite reused) -> repeated judgments,
resumable -> report.

Everything an audit writes is under its output folder (see docs/audit.md):
`sealed.json`, `validation.jsonl`, `audit.json`, `runs.jsonl`,
`report.json`, `report.txt`, `report.html`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from rubriclang.audit import seal as sealing
from rubriclang.audit.applicability import why_skipped
from rubriclang.audit.files import Lazy, write_json, write_lines
from rubriclang.audit.judge import JudgeError, JudgeInfo, JudgeSource, judge_info
from rubriclang.audit.models import Models, ModelUnavailable
from rubriclang.audit.perturb import llm
from rubriclang.audit.perturb.generate import Generation
from rubriclang.audit.report_json import AuditData, build_report, render_text
from rubriclang.audit.runner import Arm, Runner, RunsError, RunStore
from rubriclang.audit.suite import Suite
from rubriclang.audit.summary import rule_summary, summarise
from rubriclang.audit.variants import Validation, Variant
from rubriclang.evaluation.gold import GoldError, read_gold
from rubriclang.interp.items import Item, ItemError, item_to_json, read_items
from rubriclang.items.shape import shape_of
from rubriclang.safeio import OutputBusy, check_folder, describe_os_error, output_lock, write_atomic
from rubriclang.urls import shown_url

MANIFEST = "rubriclang.audit.manifest/1"


class AuditError(Exception):
    """An audit that cannot run (bad data, an unusable judge backend, a
    folder holding another audit); `hint` says what to do."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint


@attrs.frozen
class AuditRequest:
    """What `rbg audit SUITE --out DIR` was asked."""

    suite: Suite
    out: str
    sealed: str | None = None  # reuse this sealed suite
    cache: str | None = None
    no_cache: bool = False
    retry_errors: bool = False
    summary: bool = False
    reseal: bool = False  # a suite changed since the folder was sealed is sealed anew, the earlier audit set aside
    reuse: bool = True  # a judge request identical to one made before is answered by it (models.Models.judge_cache)


def _paths(out: str) -> dict[str, str]:
    names = (
        "sealed.json",
        "validation.jsonl",
        "audit.json",
        "runs.jsonl",
        "usage.json",
        "report.json",
        "report.txt",
        "report.html",
    )
    return {n.removesuffix(".json").removesuffix(".jsonl"): os.path.join(out, n) for n in names}


def load_items(suite: Suite, local, shape=None) -> list[Item]:
    """The suite's items (its first `limit`), read for the judge's declared
    item shape (`shape`) and checked against the value tables; without
    their gold when the suite says `gold = false`."""
    items = []
    try:
        for item in read_items(suite.items, shape):
            local.annotations.validate(item.id, item.candidate_ids)
            local.recorded.validate(item.id, item.candidate_ids)
            items.append(item if suite.gold else attrs.evolve(item, gold=None))
            if suite.limit and len(items) >= suite.limit:
                break
    except ItemError as exc:
        raise AuditError(f"{exc.where}: {exc.message}", exc.hint) from None
    if not items:
        raise AuditError(f"`{suite.items}` holds no items")
    return items


def _check_gold(judge: JudgeInfo, items, where: str):
    """The items, once every gold is read as `rbg eval` reads it, before
    anything runs."""
    try:
        read_gold(items, judge.graph, where, judge.mode)
    except GoldError as exc:
        raise AuditError(
            f"{exc.where}: {exc.message}", "fix the gold, or write `gold = false` in the suite to ignore it"
        ) from None
    return items


def _no_gold(item: Item) -> Item:
    """An item without its gold (`gold = false`: a sealed suite may carry it)."""
    return attrs.evolve(item, gold=None)


def local_backend(suite: Suite):
    from rubriclang.interp.local import LocalBackend
    from rubriclang.interp.tables import ValueTable

    try:
        ann = ValueTable.read(suite.annotations) if suite.annotations else None
        rec = ValueTable.read(suite.recorded) if suite.recorded else None
    except ItemError as exc:
        raise AuditError(f"{exc.where}: {exc.message}", exc.hint) from None
    return LocalBackend(ann, rec)


def _compile_notes(judge: JudgeInfo) -> list[str]:
    """What the report says of the items no compiled graph judged."""
    routes = [r.route for r in judge.routes.values()]
    notes = []
    if routes.count("failed") or routes.count("abstain"):
        notes.append(
            f"{routes.count('failed')} item(s) had no compiled graph and no fallback (compile failures) and "
            f"{routes.count('abstain')} abstained by their policy: "
            "their records are in runs.jsonl, and they are left out of the metrics (`judge.compile`)"
        )
    if routes.count("fallback"):
        notes.append(
            f"{routes.count('fallback')} item(s) whose graph did not compile were judged by their fallback graph"
        )
    return notes


def _judged(items: Sequence[Item], by_id: Mapping[str, Item], judged: Mapping[str, str]) -> Sequence[Item]:
    """The items a graph judges, in order: `items` themselves when it judges every one."""
    if all(i in judged for i in by_id):
        return items
    return Lazy([n for n, i in enumerate(by_id) if i in judged], items.__getitem__)


_NO_CHANGES: dict = {}  # every light variant's changes (and empty detail): never changed
_VALIDATIONS_MAX = 4096  # distinct validations `_Light` shares at most


class _Light:
    """Variants without their changes (their texts): what the report keeps
    of each; the sealed suite has the whole one (`Sealed.variants_by_id`).
    Their item ids are the sealed suite's own strings, and equal operator
    names and validations are held once."""

    def __init__(self, sealed: sealing.Sealed):
        self._items = sealed.items
        self._names: dict[str, str] = {}
        self._validations: dict[tuple, Validation] = {}

    def __call__(self, v: Variant) -> Variant:
        items = self._items
        at = items.position(v.item) if isinstance(items, sealing.Stored) else None
        item = items.ids[at] if isinstance(items, sealing.Stored) and at is not None else v.item
        key = attrs.astuple(v.validation)
        validation = self._validations.get(key, v.validation)
        if key not in self._validations and len(self._validations) < _VALIDATIONS_MAX:
            self._validations[key] = v.validation
        operator = self._names.setdefault(v.operator, v.operator)
        return Variant(v.id, item, operator, _NO_CHANGES, v.patch, validation, v.detail or _NO_CHANGES)


class _NoStore:
    """Where an estimate's judgments go: nowhere."""

    def write(self, *args) -> None:
        return None

    def close(self) -> None:
        return None


def _prices(graph_path: str) -> dict:
    """`[prices."MODEL"]` of the project config found upward from the judge."""
    from rubriclang.config import ConfigError, load_config

    try:
        return load_config(graph_path).prices
    except ConfigError as exc:
        raise AuditError(f"{exc.where}: {exc.message}", exc.hint) from None


class Audit:
    """One audit run; `run()` returns the report."""

    def __init__(
        self,
        req: AuditRequest,
        graph: JudgeSource,
        extra_backends: Iterable = (),
        tick: Callable[[], None] = lambda: None,
        phase: Callable[..., None] = lambda name, total, unit=None: None,
    ):
        self.req = req
        self.suite = req.suite
        self.source = graph  # one graph, or a folder of them (judge.py)
        self.extra = list(extra_backends)
        self.tick = tick
        self.phase = phase  # phase(name, units to make or None, unit=None: judgments): progress, one call per phase
        self.paths = _paths(req.out)
        self.models = Models(req.cache, req.no_cache, reuse=req.reuse)
        self.notes: list[str] = []
        self.judge_settings: dict | None = None
        self._judge_llms: list = []  # the judge's LLM backends, one per repeat, for their usage

    async def run(self, preview: bool = False) -> dict:
        """The report; raises AuditError (a file that cannot be written, a
        full disk and another audit of the folder included). With `preview`,
        only the variants: made, validated and sealed into the folder, and
        the preview document (`audit/preview.py`) written beside them."""
        try:
            return await self._run(preview)
        except OutputBusy as exc:
            raise AuditError(exc.message, "wait for it to finish, or give another --out") from None
        except OSError as exc:
            where = exc.filename or self.req.out
            raise AuditError(f"`{where}`: {describe_os_error(exc)}") from None
        finally:
            await self.models.aclose()

    async def _run(self, preview: bool = False) -> dict:
        local = local_backend(self.suite)
        items = load_items(self.suite, local, shape_of(self.source))
        judge = self._judge(items)
        _check_gold(judge, items, self.suite.items)
        os.makedirs(self.req.out, exist_ok=True)
        # One audit at a time writes a folder: two would judge everything twice.
        with output_lock(self.req.out, f"the audit folder `{self.req.out}`"):
            check_folder(self.req.out)  # its files are written and appended to by name
            sealed = await self._sealed(judge, items)
            # From here the items are the sealed suite's: the suite's own, and
            # the judge routed for them, would be a second copy held to the end.
            del items, judge
            if preview:
                return self._preview(sealed)
            return await self._locked(sealed, local)

    def _preview(self, sealed: sealing.Sealed) -> dict:
        from rubriclang.audit.preview import preview_doc, render_preview

        doc = preview_doc(sealed, self._judge(list(sealed.items)), self.paths["validation"])
        write_json(os.path.join(self.req.out, "preview.json"), doc, indent=2)
        write_atomic(os.path.join(self.req.out, "preview.html"), render_preview(doc))
        return doc

    async def _locked(self, sealed: sealing.Sealed, local) -> dict:
        judge = self._judge(sealed.items)
        gold_items = (
            _check_gold(judge, sealed.items, self.paths["sealed"]) if self.suite.gold else Lazy(sealed.items, _no_gold)
        )
        skipped, variants, graphs = self._plan(judge, sealed)
        self._manifest(judge, sealed.hash)
        records = await self._judge_all(judge, local, sealed, variants, graphs)
        judged = judge.judged
        data = AuditData(
            suite_path=self.suite.path,
            judge_path=self.suite.judge,
            judge_hash=judge.hash,
            judge=judge,
            sealed=sealed,
            operators={**sealed.operators, **self._skipped_operators(sealed)},
            skipped=skipped,
            # Items no graph judges are counted apart (`compile` in the
            # report's judge), not as judgments that failed or abstained.
            items=_judged(gold_items, sealed.items_by_id, judged),
            variants=tuple(v for v in variants if v.item in judged),
            records=records,
            repeats=self.suite.repeats,
            tolerance=self.suite.tolerance,
            seed=self.suite.seed,
            backend=self.judge_settings,
            notes=tuple(self.notes + self._notes(sealed) + _compile_notes(judge)),
        )
        self.phase("writing the report", None)
        report = build_report(data)
        if self.req.summary or self.suite.summarizer is not None:
            report["summary"] = await summarise(
                self.models.asker(self.suite.summarizer or self.suite.generator, role="summary"), report
            )
        else:
            report["summary"] = rule_summary(report)
        report["usage"] = self._usage()
        write_json(self.paths["report"], report, indent=2)
        write_atomic(self.paths["report.txt"], render_text(report))
        from rubriclang.audit.html.write import ReportError, render_folder

        try:
            page = render_folder(self.req.out, report)
        except ReportError as exc:
            raise AuditError(
                f"{exc}; report.json and report.txt are written, and `python -m rubriclang.audit.html {self.req.out}` "
                "renders the page once it is fixed"
            ) from None
        write_atomic(self.paths["report.html"], page)
        return report

    def _judge(self, items: Sequence[Item]) -> JudgeInfo:
        try:
            return judge_info(self.source, items, self.suite.positive)
        except JudgeError as exc:
            raise AuditError(str(exc)) from None

    # --- variants ----------------------------------------------------------------

    async def _sealed(self, judge: JudgeInfo, items: list[Item]) -> sealing.Sealed:
        """The sealed suite: reused (`--sealed`, or the folder's own, when
        resuming), or generated, validated and sealed now."""
        here = self.paths["sealed"]
        if self.req.sealed:
            sealed, doc = self._read_sealed(self.req.sealed)
            self._same_items(sealed, items)
            if os.path.exists(here):
                mine, _ = self._read_sealed(here)
                if mine.hash != sealed.hash:
                    raise AuditError(
                        f"`{self.req.out}` holds an audit of another sealed suite ({mine.hash[:19]}...)",
                        "give a new --out",
                    )
            else:
                write_json(here, doc)
            if sealed.judge.get("hash") != judge.hash:
                self.notes.append(
                    f"the sealed suite was made for the judge `{sealed.judge.get('name')}` "
                    f"({str(sealed.judge.get('hash'))[:19]}...): this audit reuses its variants"
                )
        elif os.path.exists(here):
            sealed, doc = self._read_sealed(here)
            if self._resealing(sealed, doc, items):
                write_json(here, await self._generate(judge, items))
                return self._read_sealed(here)[0]
        else:
            write_json(here, await self._generate(judge, items))
            return self._read_sealed(here)[0]
        self._compare(sealed, items)
        return sealed

    def _same_items(self, sealed: sealing.Sealed, items: list[Item]) -> None:
        """Refuse a sealed suite holding other content under the ids of the
        suite's items: its variants, and every judgment, are of the items as
        they were sealed, not of those the suite now has."""
        changed = sealing.changed_items(sealed, items, self.suite.items)
        if changed:
            raise AuditError(
                f"{len(changed)} item(s) of the suite differ from the items of the same ids in the sealed suite "
                f"`{self.req.sealed}` (input, responses, reference...): {sealing.listed(changed)}; its variants were "
                "made from the items as they were sealed",
                "audit the items the suite was sealed with, or make a new sealed suite of these (no --sealed)",
            )

    def _resealing(self, sealed: sealing.Sealed, doc: dict, items: list[Item]) -> bool:
        """Whether the folder's sealed suite is of a suite that has changed
        since (items, operators, seed, limit, repeats, models, tables), so
        that resuming would judge and report the old variants as this
        suite's: refused, or with --reseal, the earlier audit is set aside,
        a note says so, and the suite is to be sealed anew (True)."""
        changes = sealing.suite_changes(sealed, doc, self.suite, items)
        if not changes:
            return False
        if not self.req.reseal:
            raise AuditError(
                f"`{self.req.out}` holds an audit of `{self.suite.path}` as it was sealed, and the suite has changed "
                f"since: {'; '.join(changes)}",
                "give a new --out to audit the suite as it is now (resuming would judge the old sealed suite), or "
                "pass --reseal to seal it anew here (the earlier audit is kept in a `superseded-*` subfolder); if "
                "this folder reuses a sealed suite, pass the same --sealed again",
            )
        previews = [os.path.join(self.req.out, f"preview.{ext}") for ext in ("json", "html")]
        aside = sealing.set_aside(self.req.out, sealed.hash, [*self.paths.values(), *previews])
        self.notes.append(
            f"sealed anew (--reseal): the suite changed since this folder was sealed ({'; '.join(changes)}); the "
            f"earlier sealed suite and its judgments are in `{aside}`"
        )
        return True

    def _compare(self, sealed: sealing.Sealed, items: list[Item]) -> None:
        """Notes on what a reused sealed suite does not hold of the suite's wishes."""
        if {it.id for it in items} != set(sealed.items_by_id):
            self.notes.append("the items come from the sealed suite, which differ from the suite's `items`")
        missing = [n for n in self.suite.requested() if n not in sealed.operators and n not in sealed.skipped]
        if missing:
            self.notes.append(
                f"the sealed suite has no variants of {', '.join(missing)}; give a new --out to generate them"
            )

    def _read_sealed(self, path: str):
        try:
            return sealing.read_sealed(path, shape_of(self.source))
        except sealing.SealedError as exc:
            raise AuditError(str(exc)) from None

    async def _generate(self, judge: JudgeInfo, items: list[Item], log: bool = True, assume: bool = False) -> dict:
        """The sealed suite's document; `assume`: an estimate's (`Generation`'s `assume`)."""
        ops = [self.suite.perturbation(name) for name in self.suite.requested()]
        skipped = {op.name: reason for op in ops if (reason := why_skipped(op, judge))}
        to_run = [op for op in ops if op.name not in skipped]
        generator = validator = None
        units = Generation.item_units(to_run, items)
        self.phase(f"making and validating the variants of {len(to_run)} operator(s)", units or None, unit="variants")
        if any(op.generator == "llm" for op in to_run):
            generator = self.models.asker(self.suite.generator, role="generate")
            validator = self.models.asker(self.suite.validator, role="validate")
        result = await Generation(
            judge, self.suite.seed, generator, validator, self.suite.concurrency, self.tick, assume=assume
        ).run(to_run, items)
        if log:
            write_lines(self.paths["validation"], result.log)
        return sealing.seal(
            judge={"name": judge.graph.name, "hash": judge.hash, "graphs": judge.hashes},
            items=Lazy(items, item_to_json),
            variants=result.variants,
            patches=result.patches,
            operators=to_run,
            counts=result.counts,
            skipped=skipped,
            prompts=llm.PROMPTS,
            suite=sealing.suite_settings(self.suite),
            rejections=sealing.rejections(result.log, result.counts),
        )

    def _skipped_operators(self, sealed: sealing.Sealed) -> dict:
        """Definitions of the operators the sealed suite skipped (for the report's list)."""
        from rubriclang.audit.perturbations import load_perturbations

        perturbations = {**load_perturbations(), **self.suite.custom}
        return {
            name: perturbations[name]
            for name in sealed.skipped
            if name in perturbations and name not in sealed.operators
        }

    def _plan(self, judge: JudgeInfo, sealed: sealing.Sealed):
        """(skipped operators with reasons, variants to judge, graphs by
        (graph id, patch)) for this judge: each patch applies to its graph
        (to every graph when it names none), and a sealed suite made for
        another judge may hold operators or patches that do not apply to
        this one."""
        skipped = dict(sealed.skipped)
        for name, op in sealed.operators.items():
            reason = why_skipped(op, judge)
            if reason:
                skipped[name] = reason
        graphs: dict = {(gid, None): g for gid, g in judge.graphs.items()}
        for pid, patch in sealed.patches.items():
            targets = [patch.graph] if patch.graph is not None else sorted(judge.graphs)
            for gid in targets:
                graph = judge.graphs.get(gid)
                if graph is None:
                    skipped.setdefault(
                        patch.operator,
                        f"the sealed suite's patch `{pid}` is of the graph `{gid}`, which this judge lacks",
                    )
                    continue
                missing, unknown = patch.missing(graph), patch.unknown(graph)
                if missing:
                    skipped.setdefault(
                        patch.operator,
                        f"the sealed suite's patch names criteria this judge lacks: {', '.join(missing)}",
                    )
                elif unknown:
                    skipped.setdefault(
                        patch.operator,
                        f"the sealed suite's patch sets {', '.join(f'`{u}`' for u in unknown)}, which no procedure "
                        "reads (sealed by an older version): seal the suite again with a new --out",
                    )
                else:
                    graphs[(gid, pid)] = patch.apply(graph)
        judged = judge.judged
        # Without their changes (`_Light`): an arm reads a variant's when it is judged.
        light = _Light(sealed)
        variants = [
            light(v)
            for v in sealed.variants
            if v.operator not in skipped and (v.patch is None or (judged.get(v.item), v.patch) in graphs)
        ]
        return skipped, variants, graphs

    def _notes(self, sealed: sealing.Sealed) -> list[str]:
        notes = []
        unavailable = sum(c.get("unavailable", 0) for c in sealed.counts.values())
        if unavailable:
            notes.append(
                f"{unavailable} LLM-made variant(s) could not be validated (validator unavailable) and were left out; "
                "to validate them, run again with a new --out (the generator's calls are cached)"
            )
        if self.judge_settings and self.judge_settings["temperature"] == 0:
            notes.append("the judge samples at temperature 0: its repeats measure only the server's own nondeterminism")
        return notes

    # --- usage and estimates ---------------------------------------------------------

    def _models(self) -> dict[str, tuple]:
        """phase -> the models that served it."""
        out = {
            role: tuple(sorted({a.client.model for a in askers}, key=str))
            for role, askers in self.models.askers.items()
        }
        out["judge"] = tuple(sorted({c.client.model for b in self._judge_llms for c in b.callers.values()}, key=str))
        return out

    def _usage(self) -> dict:
        """Calls and tokens sent to servers per phase, over every run into
        this folder (`usage.json` adds each run's), with their price where
        the project config has one. Cache hits cost nothing and are not
        counted, so a rerun answered from the cache leaves it as it was."""
        from rubriclang.llm.calls import Usage

        path = self.paths["usage"]
        have = {}
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as fh:
                    have = json.load(fh).get("phases", {})
            except (OSError, ValueError, AttributeError) as exc:
                raise AuditError(f"cannot read `{path}`: {exc}", "remove it to count from this run on") from None
        now: dict[str, Usage] = {}
        for role, askers in self.models.askers.items():
            for a in askers:
                now.setdefault(role, Usage()).add(a.caller.usage)
        for b in self._judge_llms:
            now.setdefault("judge", Usage()).add(b.usage)
        phases = {}
        for name in sorted(set(have) | set(now)):
            old = have.get(name, {})
            u = now.get(name, Usage())
            phases[name] = {
                k: int(old.get(k, 0)) + getattr(u, k) for k in ("calls", "prompt_tokens", "completion_tokens")
            }
            # Requests answered by an identical request of the audit (`llm.calls.Usage.shared`;
            # every hit of the judge's private cache, which holds this audit's answers alone):
            # calls saved, e.g. a variant's criterion whose prompt the perturbation left as it was.
            private = name == "judge" and self.models.judge_cache_private
            phases[name]["reused"] = int(old.get("reused", 0)) + u.shared + (u.cache_hits if private else 0)
        write_json(path, {"schema": "rubriclang.audit.usage/1", "phases": phases})
        from rubriclang.llm.estimate import cost

        prices = _prices(self.suite.judge)
        models = self._models()
        return {name: {**p, "usd": cost(p, models.get(name, ()), prices)} for name, p in phases.items()}

    async def estimate(self) -> tuple[dict, list[str], list[str]]:
        """`rbg audit SUITE --estimate`: the calls and tokens per phase
        (generate, validate, judge), calling no model and writing nothing.
        Rule variants are made and judged (requests tallied, not sent);
        LLM-made variants cannot be, so their judging is counted as the
        original item's, and validation as one call per generated variant
        with the generator's prompt size: those two are approximations."""
        import contextlib
        import tempfile

        from rubriclang.llm.estimate import Estimate

        est = Estimate()
        self.models = Models(None, True, estimate=est)
        stack = contextlib.ExitStack()
        try:
            local = local_backend(self.suite)
            items = load_items(self.suite, local, shape_of(self.source))
            judge = self._judge(items)
            _check_gold(judge, items, self.suite.items)
            if self.req.sealed:
                sealed = self._read_sealed(self.req.sealed)[0]
            else:
                est.phase = "generate"
                doc = await self._generate(judge, items, log=False, assume=True)
                # Kept to the end: the sealed suite's items and variants are read from it as they are used.
                tmp = stack.enter_context(tempfile.TemporaryDirectory())
                write_json(os.path.join(tmp, "sealed.json"), doc)
                sealed = self._read_sealed(os.path.join(tmp, "sealed.json"))[0]
            judge = self._judge(list(sealed.items))
            skipped, variants, graphs = self._plan(judge, sealed)
            est.phase = "judge"
            await self._judge_all(judge, local, sealed, variants, graphs, store=_NoStore())
            return self._estimate_doc(est, judge, sealed, skipped)
        finally:
            stack.close()
            await self.models.aclose()

    def _estimate_doc(self, est, judge: JudgeInfo, sealed, skipped: dict) -> tuple[dict, list[str], list[str]]:
        """(estimate, phases, notes) for `cli/estimate.document`."""
        gen = est.get("generate")
        ops = [
            self.suite.perturbation(n) for n in self.suite.requested() if n not in skipped and n not in sealed.skipped
        ]
        ops = [op for op in ops if op.generator == "llm"] if not self.req.sealed else []
        # Judge-side ones were judged as `generate.assumed_patches`; item-side ones
        # cannot be made without the generator.
        assumed = [op.name for op in ops if op.judge_side]
        llm_ops = [op for op in ops if not op.judge_side]
        notes = []
        reused = est.reused.get("judge:items", 0) + est.reused.get("judge", 0)
        if reused:
            notes.append(
                f"{reused} of the judge's calls are reused, not counted: a variant's criterion whose prompt the "
                "perturbation left as it was is answered by the baseline's judgment of the same repeat"
            )
        if assumed:
            notes.append(
                f"the judging of {', '.join(assumed)} assumes every criterion text they rewrite is accepted (the "
                "texts marked, not rewritten: their prompt tokens are the originals'); a rejected rewrite leaves its "
                "criterion's judgments reused, so the judge's calls are at most these"
            )
        if gen.calls:
            v = self.suite.validator.max_tokens
            est.phases["validate"] = gen.with_completion(v)
            est.models["validate"] = {
                self.suite.validator.model or ("embedded" if not self.suite.validator.base_url else None)
            }
            notes.append(
                "validation is counted as one call per generated variant, with the generator's prompt size (an "
                "approximation)"
            )
        if llm_ops:
            per_item = est.get("judge:items")
            extra = per_item.scaled(len(llm_ops))
            judged = est.phases.setdefault("judge", extra.scaled(0))
            judged.merge(extra)
            notes.append(
                f"the judging of {len(llm_ops)} LLM-made variant(s) per item is counted as the original item's (an "
                "approximation)"
            )
        est.phases.pop("judge:items", None)
        return est, ["generate", "validate", "judge"], notes

    # --- judging -----------------------------------------------------------------

    def _manifest(self, judge: JudgeInfo, sealed_hash: str) -> None:
        cfg = self.suite.judge_model
        uses_llm = bool(judge.llm_criteria)
        backend = (
            {
                "base_url": shown_url(cfg.base_url) if cfg.base_url else None,  # its query may hold a token
                "model": cfg.model,
                "model_file": cfg.model_file,
                "temperature": cfg.temperature,
                "seed": cfg.seed,
                "max_tokens": cfg.max_tokens,
            }
            if uses_llm
            else None
        )
        want = {"schema": MANIFEST, "judge": judge.hash, "sealed": sealed_hash, "backend": backend}
        path = self.paths["audit"]
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as fh:
                    have = json.load(fh)
            except (OSError, ValueError) as exc:
                raise AuditError(f"cannot read `{path}`: {exc}") from None
            if have != want:
                what = [k for k in ("judge", "sealed", "backend") if have.get(k) != want[k]]
                raise AuditError(
                    f"`{self.req.out}` holds an audit with another {' and '.join(what)}; its judgments cannot be "
                    "mixed with this one's",
                    "give a new --out, or remove the folder to start over",
                )
        else:
            write_json(path, want)

    def _judge_backends(self, judge: JudgeInfo, local) -> Callable[[int], list]:
        """backends_for(repeat): the extra backends, the local one, and an LLM
        backend sampling with seed + repeat when the judge has LLM criteria
        (each model profile's seed too, so repeats are distinct samples);
        one for every graph of the set."""
        if not judge.llm_criteria:
            return lambda r: [*self.extra, local]
        from rubriclang.interp.graphset import Union
        from rubriclang.llm.backend import LLMBackend, Profile
        from rubriclang.llm.client import Sampling

        cfg = self.suite.judge_model
        try:
            client, sampling, profiles = self.models.judges(
                Union(judge.criteria, judge.graph.path),
                cfg,
                Sampling(temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=cfg.seed),
            )
            cache = self.models.judge_cache
        except ModelUnavailable as exc:
            raise AuditError(f"the judge's LLM backend: {exc}") from None
        self._clients = {None: client, **{name: p.client for name, p in profiles.items()}}
        self._sampling = sampling

        def reseeded(s: Sampling, r: int) -> Sampling:
            return attrs.evolve(s, seed=(s.seed or 0) + r)

        def backends_for(r: int) -> list:
            extra = {name: Profile(p.client, reseeded(p.sampling, r)) for name, p in profiles.items()}
            llm = LLMBackend(client, cache, reseeded(sampling, r), profiles=extra)
            self._judge_llms.append(llm)
            return [*self.extra, local, llm]

        return backends_for

    async def _check_judge_model(self) -> None:
        from rubriclang.llm.client import LLMError

        clients = getattr(self, "_clients", None)
        if clients is None:
            return
        checked = set()
        for name, client in clients.items():
            if id(client) in checked:
                continue
            checked.add(id(client))
            try:
                await client.check_model()
            except LLMError as exc:
                which = f"model profile `{name}`" if name else self.suite.judge_model.describe()
                raise AuditError(
                    f"the judge's LLM backend ({which}): {exc.message}",
                    "check the [judge] table of the suite" if not name else "check the profile in the project config",
                ) from None
        self.judge_settings = {
            "model": clients[None].model,
            "temperature": self._sampling.temperature,
            "seed": self._sampling.seed,
        }

    async def _judge_all(self, judge: JudgeInfo, local, sealed, variants, graphs, store=None) -> dict:
        from rubriclang.interp.engine import BackendError

        arms = [Arm(i, None, None, sealed) for i in sealed.items_by_id]
        arms += [Arm(v.item, v.id, v.patch, sealed) for v in variants]
        runner = Runner(graphs, judge.routes, self._judge_backends(judge, local), judge.mode, self.suite.concurrency)
        try:
            for gid in judge.graphs:
                runner.interpreter(gid, None, 0)
        except BackendError as exc:
            raise AuditError(str(exc)) from None
        await self._check_judge_model()
        if store is None:
            store = RunStore(self.paths["runs"])
            try:
                done = store.load(drop_failed=self.req.retry_errors)
                store.check_subjects(arms)
            except RunsError as exc:
                raise AuditError(str(exc), "give a new --out") from None
        else:  # an estimate: the original items first, tallied apart
            done = {}
            estimate = self.models.connections.estimate
            estimate.phase = "judge:items"
            await runner.run(arms[: len(sealed.items)], self.suite.repeats, done, store)
            estimate.phases["judge"] = estimate.get("judge:items").scaled(1)
            estimate.phase = "judge"
        todo = sum(1 for arm in arms for r in range(self.suite.repeats) if (arm.item, arm.variant, r) not in done)
        self.phase(f"judging {len(arms)} items and variants x {self.suite.repeats} repeats", todo)
        try:
            await runner.run(arms, self.suite.repeats, done, store, self.tick)
        finally:
            store.close()
        return done
