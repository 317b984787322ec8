"""The audit report, `report.json` (schema `rubriclang.audit.report/2`,
documented in docs/audit.md), and its short text form, `report.txt`.

Everything in it is computed from the sealed suite and the recorded
judgments alone, and written with sorted keys: the same judgments give a
byte-identical report.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from rubriclang.audit.figures import GOLD_FIGURES, NOT_MEASURED, label
from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.localize import EPS, Localizer, moved_criteria
from rubriclang.audit.metrics import Scorer, Summary, Tally, excess, gold_extras, mean_estimate, pairwise_gold
from rubriclang.audit.perturbations import SURFACES, Perturbation
from rubriclang.audit.runner import Shared
from rubriclang.audit.seal import Sealed
from rubriclang.audit.summary import nothing_measured
from rubriclang.audit.summary import render_text as summary_lines
from rubriclang.audit.variants import Variant, texts
from rubriclang.catalog import load_catalog
from rubriclang.evaluation.gold import TIE
from rubriclang.interp.items import Item
from rubriclang.safetext import printable

SCHEMA = "rubriclang.audit.report/3"


@attrs.frozen
class AuditData:
    """Everything a report is computed from."""

    suite_path: str
    judge_path: str
    judge_hash: str
    judge: JudgeInfo
    sealed: Sealed
    operators: dict[str, Perturbation]  # every requested operator
    skipped: dict[str, str]  # operator -> why it did not run
    items: Sequence[Item]  # the items judged, read as they are needed
    variants: tuple[Variant, ...]  # the variants judged, without their changes (the sealed suite has them)
    records: dict  # (item, variant, repeat) -> compact trace (audit.runner.Records)
    repeats: int
    tolerance: float
    seed: int
    backend: dict | None
    notes: tuple[str, ...] = ()


@attrs.frozen
class VariantResult:
    variant: Variant
    op: Perturbation
    summary: Summary
    outcome: str
    judgment_flips: tuple[int, int]  # (flips, judgments measured)
    localization: dict
    gold: tuple | None
    # (flips, judgments) against each leave-one-out baseline, for the excess.
    loo_flips: tuple[int, int] = (0, 0)
    # (judgments below, judgments) against the same baselines, for detection over noise.
    loo_falls: tuple[int, int] = (0, 0)
    contradiction: str | None = None  # directional: contradicted, consistent, failed, or None
    underlying: Any = None  # the score a threshold sink reads, summarised over the repeats

    @property
    def failed_judgments(self) -> int:
        return self.summary.failures


class Reporter:
    """Builds the report from AuditData."""

    def __init__(self, data: AuditData):
        self.d = data
        self.scorer = Scorer(data.judge, data.tolerance)
        # Each item's nodes are those of its own graph.
        self.locs = {gid: Localizer(g) for gid, g in data.judge.graphs.items()}
        self.judged = data.judge.judged
        # What the report reads of each item but its texts (its gold), in order (`_gold_only`).
        self.items: dict[str, Item] = {}
        self.base: dict[str, Summary] = {}
        self.base_nodes: dict[str, dict] = {}
        self.noise = Tally()
        self.noise_of: dict[str, tuple[int, int]] = {}  # item -> (repeat flips, repeats compared)
        self.fall_noise = Tally()
        self.stability: dict[str, str] = {}
        self.crit_noise: dict[str, Tally] = collections.defaultdict(Tally)
        # Most items' node values, and most variants' localizations, take a few forms: each held once.
        share = self._share = Shared()
        self._tuples = Shared()  # a variant's (hits, measured) counts take a few forms
        blank: dict[tuple[str, ...], dict[str, str]] = {}
        for it in data.items:
            self.items[it.id] = _gold_only(it, blank)
            traces = self._traces(it.id, None)
            self.base[it.id] = self.scorer.summary(traces)
            loc = self.loc(it.id)
            self.base_nodes[it.id] = share(loc.summaries([t for t in traces if t]))
            self.stability[it.id] = self.scorer.stability(self.base[it.id])
            # One repeat has no other to be compared with: it measures no noise, and did not fail.
            compared = data.repeats if data.repeats > 1 else 0
            self.noise_of[it.id] = self._tuples(self.scorer.repeat_flips(traces))
            self.noise.add(it.id, *_with_failed(self.noise_of[it.id], compared))
            self.fall_noise.add(it.id, *_with_failed(self.scorer.repeat_falls(traces), compared))
            for crit, (k, n, failed) in loc.repeat_moves([t for t in traces if t], self.base_nodes[it.id]).items():
                self.crit_noise[crit].add(it.id, k, n, failed)
        self.threshold = _threshold_sink(data.judge)
        self.results = [self._result(v) for v in data.variants]

    def loc(self, item: str) -> Localizer:
        """The localizer of the graph that judges `item`."""
        return self.locs[self.judged[item]]

    def _traces(self, item: str, variant: str | None) -> list[dict | None]:
        records = self.d.records
        return [records.get((item, variant, r)) for r in range(self.d.repeats)]

    def _result(self, v: Variant) -> VariantResult:
        op = self.d.operators[v.operator]
        traces = self._traces(v.item, v.id)
        s = self.scorer.summary(traces)
        base = self.base[v.item]
        contradiction = None
        if op.relation == "invariant":
            outcome = self.scorer.invariant_outcome(s, base)
            gold = self.scorer.gold(s, self.items[v.item])
        else:
            outcome = self.scorer.directional_outcome(s, base)
            contradiction = self.scorer.contradiction(s, base)
            gold = None
        loc = self.loc(v.item)
        nodes = loc.summaries([t for t in traces if t])
        localization = self._share(loc.compare(self.base_nodes[v.item], nodes))
        # The item's own repeats, read again rather than held for every item.
        base_traces = self._traces(v.item, None)
        loo = self.scorer.loo_flips(traces, base_traces)
        falls = self.scorer.loo_falls(traces, base_traces)
        under = _one(nodes.get(self.threshold.ports["value"][0])) if self.threshold else None
        keep = self._tuples
        return VariantResult(
            v,
            op,
            s,
            outcome,
            keep(self.scorer.judgment_flips(s, base)),
            localization,
            keep(gold),
            keep(loo),
            keep(falls),
            contradiction,
            under,
        )

    def threshold_block(self, dirs: list[VariantResult]) -> dict | None:
        """Binary judges whose sink thresholds a score: how the score under
        the threshold moved on the eligible degradations, crossing or not."""
        if self.threshold is None:
            return None
        node, at = self.threshold.ports["value"][0], float(self.threshold.params["at"])
        fell, quiet, shift, margin = Tally(), Tally(), Tally(), Tally()
        for r in dirs:
            if r.outcome == "ineligible":
                continue
            item = r.variant.item
            before = _one(self.base_nodes[item].get(node))
            failed = r.outcome == "failed" or before is None or r.underlying is None
            down = not failed and float(r.underlying) < float(before) - EPS
            fell.unit(item, down, failed)
            quiet.unit(item, down and r.outcome != "detected", failed)
            if not failed:
                shift.add(item, float(r.underlying) - float(before))
                margin.add(item, float(before) - at)
        return {
            "node": node,
            "at": at,
            "inclusive": bool(self.threshold.params["inclusive"]),
            "score_fell": fell.rate(),
            "fell_without_crossing": quiet.rate(),
            "score_shift": mean_estimate(shift),
            "margin": mean_estimate(margin),
        }

    def _shift(self, results: list[VariantResult]) -> dict | None:
        """The mean signed change of the verdict on the judge's scale
        (variant minus baseline; binary: 1 = positive), with its interval;
        None for judges without a scale or without a decided pair."""
        shift = Tally()
        for r in results:
            a, b = self.scorer.score(r.summary), self.scorer.score(self.base[r.variant.item])
            if a is not None and b is not None:
                shift.add(r.variant.item, a - b)
        return mean_estimate(shift)

    def _unstable(self, results: list[VariantResult], hit: str) -> dict:
        on = [r for r in results if self.stability[r.variant.item] == "unstable"]
        return {"variants": len(on), hit: sum(r.outcome == hit for r in on)}

    # --- blocks ----------------------------------------------------------------

    def invariant_block(self, results: list[VariantResult]) -> dict | None:
        inv = [r for r in results if r.op.relation == "invariant"]
        if not inv:
            return None
        # The score shift's bootstrap block is the report's peak: made before the rates' tables, not beside them.
        shift = self._shift(inv)
        flips, judgments, loo, steady = Tally(), Tally(), Tally(), Tally()
        for r in inv:
            failed = r.outcome == "failed"
            flips.unit(r.variant.item, r.outcome == "flipped", failed)
            judgments.add(r.variant.item, *_with_failed(r.judgment_flips, self.d.repeats))
            loo.add(r.variant.item, *r.loo_flips)
            if self.stability[r.variant.item] == "stable":
                steady.unit(r.variant.item, r.outcome == "flipped", failed)
        outcomes = collections.Counter(r.outcome for r in inv)
        return {
            "variants": len(inv),
            "stable": outcomes["stable"],
            "flipped": outcomes["flipped"],
            "failed": outcomes["failed"],
            "flip_rate": flips.rate(),
            "flip_rate_stable_baseline": steady.rate(),
            "unstable_baseline": self._unstable(inv, "flipped"),
            "judgment_flip_rate": judgments.rate(),
            "excess_over_noise": excess(loo, self.noise),
            "score_shift": shift,
            "gold": self.gold_block([(self.items[r.variant.item], r.summary) for r in inv]),
            **(self.decision_shift(inv) if self.d.judge.type == "pairwise" else {}),
        }

    def directional_block(self, results: list[VariantResult]) -> dict | None:
        dirs = [r for r in results if r.op.relation == "directional"]
        if not dirs:
            return None
        shift, threshold = self._shift(dirs), self.threshold_block(dirs)  # as in `invariant_block`
        detected, steady, falls, contra = Tally(), Tally(), Tally(), Tally()
        for r in dirs:
            item = r.variant.item
            if r.outcome != "ineligible":
                failed = r.outcome == "failed"
                detected.unit(item, r.outcome == "detected", failed)
                falls.add(item, *r.loo_falls)
                if self.stability[item] == "stable":
                    steady.unit(item, r.outcome == "detected", failed)
            if r.contradiction is not None:
                contra.unit(item, r.contradiction == "contradicted", r.contradiction == "failed")
        outcomes = collections.Counter(r.outcome for r in dirs)
        return {
            "variants": len(dirs),
            "eligible": len(dirs) - outcomes["ineligible"],
            "ineligible": outcomes["ineligible"],
            "detected": outcomes["detected"],
            "missed": outcomes["missed"],
            "failed": outcomes["failed"],
            "contradicted": sum(r.contradiction == "contradicted" for r in dirs),
            "detection_rate": detected.rate(),
            "detection_rate_stable_baseline": steady.rate(),
            "unstable_baseline": self._unstable([r for r in dirs if r.outcome != "ineligible"], "detected"),
            "detection_over_noise": excess(falls, self.fall_noise),
            "contradiction_rate": contra.rate(),
            "score_shift": shift,
            "threshold": threshold,
        }

    def gold_block(self, scored: list[tuple[Item, Summary]]) -> dict | None:
        """Figures against gold: a pairwise judge's are `rbg eval`'s
        (agreement, agreement without ties, coverage, tie and abstain
        rates); the others' accuracy, and for ordinal judges within
        tolerance, MAE and rank correlation; every one with the confusion."""
        graded = [(item, s, g) for item, s in scored if (g := self.scorer.gold(s, item)) is not None]
        if not graded:
            return None
        with_gold = [(item, s) for item, s, _ in graded]
        if self.d.judge.type == "pairwise":
            return {**pairwise_gold(self.scorer, with_gold), **gold_extras(self.scorer, with_gold)}
        accuracy, within, mae = Tally(), Tally(), Tally()
        for item, s, (correct, agree, err) in graded:
            failed = s.status == "failed"
            accuracy.unit(item.id, correct, failed)
            if agree is not None:
                within.unit(item.id, agree, failed)
            if err is not None:
                mae.add(item.id, err)
        ordinal = self.scorer.ordinal
        return {
            "accuracy": accuracy.rate(),
            "within_tolerance": within.rate() if ordinal else None,
            "mae": mean_estimate(mae) if ordinal else None,
            **gold_extras(self.scorer, with_gold),
        }

    def decisions(self, pairs: list[tuple[str, Summary]]) -> tuple[Tally, Tally]:
        """Per item, its judgments by decision: (ties, abstentions) Tallies
        over the judgments measured (a failed one measured nothing)."""
        ties, abstains = Tally(), Tally()
        for item, s in pairs:
            kept = [d for d in s.verdicts if d.status != "failed"]
            failed = len(s.verdicts) - len(kept)
            ties.add(item, sum(d.status == "ok" and d.value == TIE for d in kept), len(kept), failed)
            abstains.add(item, sum(d.status == "abstain" for d in kept), len(kept), failed)
        return ties, abstains

    def decisions_block(self) -> dict:
        """The original items' judgments by decision: tie (pairwise judges)
        and abstain rates, each value's count, and `collapsed`, the one
        decision every judgment measured gave when there is only one (on
        two items or more): then no rate here measures anything."""
        ties, abstains = self.decisions([(i, self.base[i]) for i in self.items])
        values = collections.Counter(
            _key(d.to_json()) for s in self.base.values() for d in s.verdicts if d.status != "failed"
        )
        measured_items = sum(1 for s in self.base.values() if any(d.status != "failed" for d in s.verdicts))
        return {
            "judgments": sum(values.values()),
            "values": [{**json.loads(k), "count": n} for k, n in sorted(values.items())],
            "collapsed": json.loads(next(iter(values))) if len(values) == 1 and measured_items >= 2 else None,
            "tie_rate": ties.rate() if self.d.judge.type == "pairwise" else None,
            "abstain_rate": abstains.rate(),
        }

    def decision_shift(self, inv: list[VariantResult]) -> dict:
        """A pairwise judge's tie and abstain rates on invariant variants,
        and their change from the same items' original judgments."""
        ties, abstains = self.decisions([(r.variant.item, r.summary) for r in inv])
        base_ties, base_abstains = self.decisions([(r.variant.item, self.base[r.variant.item]) for r in inv])
        out = {"tie_rate": ties.rate(), "abstain_rate": abstains.rate()}
        for name, now, before in (
            ("tie_rate_change", ties, base_ties),
            ("abstain_rate_change", abstains, base_abstains),
        ):
            out[name] = excess(now, before)
        return out

    def group(self, results: list[VariantResult]) -> dict:
        return {"invariant": self.invariant_block(results), "directional": self.directional_block(results)}

    # --- sections ----------------------------------------------------------------

    def by_criterion(self) -> dict:
        """Per criterion name, over the graphs that have a criterion of that
        name (`graphs`: how many): of a folder compiled per instance, the
        same name may ask each instance's own question."""
        out = {}
        having: dict[str, set[str]] = collections.defaultdict(set)
        for gid, g in self.d.judge.graphs.items():
            for c in g.criteria:
                having[c.name].add(gid)
        for c in self.d.judge.criteria:
            if c.name in out:
                continue
            inv, dirs = Tally(), Tally()
            in_flips = in_detections = 0
            for r in self.results:
                if self.judged[r.variant.item] not in having[c.name]:
                    continue
                moved = c.name in moved_criteria(r.localization)
                (inv if r.op.relation == "invariant" else dirs).unit(r.variant.item, moved, r.outcome == "failed")
                in_flips += moved and r.op.relation == "invariant" and r.outcome == "flipped"
                in_detections += moved and r.outcome == "detected"
            out[c.name] = {
                "procedure": c.procedure,
                "repeat_move_rate": self.crit_noise[c.name].rate(),
                "invariant_move_rate": inv.rate(),
                "directional_move_rate": dirs.rate(),
                "in_flips": int(in_flips),
                "in_detections": int(in_detections),
                "graphs": len(having[c.name]),
            }
        return out

    def by_item(self) -> ByItem:
        """The per-item table, each entry made when it is read (`ByItem`)."""
        return ByItem(self)

    def item_entry(self, item: str, results: list[VariantResult]) -> dict:
        """`by_item`'s entry of one item, with its variants' `results`."""
        it = self.items[item]
        base = self.base[item]
        g = self.scorer.gold(base, it)
        return {
            "baseline": base.to_json(),
            "baseline_stability": self.stability[item],
            "gold": it.gold,
            "correct": None if g is None else g[0],
            "repeat_flips": self.scorer.judgment_flips(base, base)[0],
            "repeat_noise": dict(zip(("flips", "compared"), self.noise_of[item], strict=True)),
            "repeats": self.d.repeats,
            "variants": {
                r.variant.id: {
                    "operator": r.op.name,
                    "outcome": r.outcome,
                    "result": r.summary.to_json(),
                    **_elements(r.variant),
                }
                for r in results
            },
        }

    def finding(self, r: VariantResult) -> dict:
        # The item and the variant whole, texts and changes, read from the sealed suite.
        v = self.d.sealed.variants_by_id.get(r.variant.id, r.variant)
        item = self.d.sealed.items_by_id[v.item]
        if v.patch is not None:
            patch = self.d.sealed.patches[v.patch]
            original, perturbed = patch.texts(self.d.judge.graphs[self.judged[v.item]])
            changed = ["criteria"] + (["criterion_order"] if patch.criterion_order else [])
        else:
            original, perturbed = texts(item), texts(v.apply(item))
            changed = sorted(v.changes)
        return {
            "variant": v.id,
            "item": v.item,
            "operator": r.op.name,
            "surface": r.op.surface,
            "relation": r.op.relation,
            "generator": r.op.generator,
            "outcome": r.outcome,
            "changed": changed,
            "original": original,
            "perturbed": perturbed,
            "validation": v.validation.to_json(),
            "baseline": self.base[v.item].to_json(),
            "baseline_stability": self.stability[v.item],
            "result": r.summary.to_json(),
            "localization": r.localization,
            **_elements(v),
        }

    def baselines(self) -> dict:
        """How many items have a stable, unstable or failed baseline, and which are unstable."""
        c = collections.Counter(self.stability.values())
        return {
            "stable": c["stable"],
            "unstable": c["unstable"],
            "failed": c["failed"],
            "unstable_items": sorted(k for k, v in self.stability.items() if v == "unstable"),
        }

    def operators(self) -> list[dict]:
        out = []
        for name in sorted(self.d.operators):
            op = self.d.operators[name]
            counts = self.d.sealed.counts.get(name, {})
            skipped = self.d.skipped.get(name)
            rejected = self.d.sealed.rejections.get(name)
            out.append(
                {
                    "name": name,
                    "surface": op.surface,
                    "relation": op.relation,
                    "generator": op.generator,
                    "status": "skipped" if skipped else "run",
                    "reason": skipped or (none_accepted(counts, rejected) if rejected is not None else None),
                    "variants": {
                        k: int(counts.get(k, 0)) for k in ("generated", "accepted", "rejected", "unavailable", "failed")
                    },
                }
            )
        return out

    def report(self) -> dict:
        d = self.d
        g = d.judge
        results = self.results
        judged = len(d.items) * d.repeats + len(results) * d.repeats
        failed = sum(s.failures for s in self.base.values()) + sum(r.summary.failures for r in results)
        surfaces = {
            s: self.group([r for r in results if r.op.surface == s])
            for s in SURFACES
            if any(r.op.surface == s for r in results)
        }
        operators = {
            name: self.group([r for r in results if r.op.name == name]) for name in sorted({r.op.name for r in results})
        }
        return {
            "schema": SCHEMA,
            "suite": {
                "path": d.suite_path,
                "sealed": d.sealed.hash,
                "repeats": d.repeats,
                "tolerance": d.tolerance,
                "seed": d.seed,
            },
            "judge": {
                "name": g.graph.name,
                "path": d.judge_path,
                "hash": d.judge_hash,
                "type": g.type,
                "mode": g.mode,
                "output": str(g.output) if g.output is not None else None,
                "positive": g.positive,
                "criteria": _criteria(g),
                "graphs": g.hashes,
                "compile": {
                    route: sum(1 for r in g.routes.values() if r.route == route)
                    for route in ("compiled", "fallback", "abstain", "failed")
                },
                "backend": d.backend,
            },
            "counts": {
                "items": len(d.items),
                "variants": len(results),
                "judgments": judged,
                "failed_judgments": failed,
            },
            "operators": self.operators(),
            "metrics": {
                "repeat_flip_rate": self.noise.rate(),
                "baselines": self.baselines(),
                "decisions": self.decisions_block(),
                "invariant": self.invariant_block(results),
                "directional": self.directional_block(results),
                "gold": self.gold_block([(it, self.base[i]) for i, it in self.items.items()]),
            },
            "by_surface": surfaces,
            "by_operator": operators,
            "by_item": self.by_item(),
            "by_criterion": self.by_criterion(),
            "flips": [
                self.finding(r)
                for r in sorted(results, key=lambda r: r.variant.id)
                if r.op.relation == "invariant" and r.outcome != "stable"
            ],
            "misses": [
                self.finding(r)
                for r in sorted(results, key=lambda r: r.variant.id)
                if r.outcome in ("missed", "failed") and r.op.relation == "directional"
            ],
            "notes": sorted(
                d.notes
                + (
                    (
                        f"{failed} judgment(s) failed: they measured nothing, so they are in no rate (neither "
                        "flips nor stable; each rate's coverage says how much was measured); `--retry-errors` "
                        "judges them again",
                    )
                    if failed
                    else ()
                )
            ),
            "summary": None,
        }


def none_accepted(counts: dict, reasons: list[dict]) -> str:
    """Why an operator that ran has no variant to judge: `all 12 variants
    rejected: REASON (12)`, or each outcome's count when they differ, then
    the commonest reasons (`seal.rejections`)."""
    outcomes = {k: int(counts.get(k, 0)) for k in ("rejected", "unavailable", "failed") if counts.get(k)}
    total = sum(outcomes.values())
    if list(outcomes) == ["rejected"]:
        head = f"all {total} variant(s) rejected"
    else:
        head = f"no variant accepted of {total} (" + ", ".join(f"{n} {k}" for k, n in outcomes.items()) + ")"
    why = "; ".join(f"{r['reason'] or r['verdict']} ({r['count']})" for r in reasons)
    return f"{head}: {why}" if why else head


class ByItem(Mapping):
    """report.json's `by_item`: item id -> its baseline, noise, gold and
    variants' outcomes, each entry made from the reporter's figures when it
    is read and not kept (a table of about 2 KB an item, written entry by
    entry by `audit.files.write_json` and read by id by the page)."""

    def __init__(self, reporter: Reporter):
        self._reporter = reporter
        self._results: dict[str, list[VariantResult]] = {}
        for r in reporter.results:
            self._results.setdefault(r.variant.item, []).append(r)

    def __getitem__(self, item: str) -> dict:
        if item not in self._reporter.items:
            raise KeyError(item)
        return self._reporter.item_entry(item, self._results.get(item, []))

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._reporter.items))

    def __len__(self) -> int:
        return len(self._reporter.items)


_NONE: dict = {}  # the empty tables of every item `_gold_only` makes: never changed


def _gold_only(item: Item, blank: dict[tuple[str, ...], dict[str, str]]) -> Item:
    """`item` without its texts: its id, gold and candidate ids are what its
    gold is read with (`evaluation.gold.item_gold`); equal empty candidate
    tables (`blank`) are held once."""
    ids = tuple(item.candidates)
    return Item(
        item.id,
        "",
        blank.setdefault(ids, dict.fromkeys(ids, "")),
        gold=item.gold,
        annotations=_NONE,
        recorded=_NONE,
        fields=_NONE,
        line=item.line,
    )


def _with_failed(hits: tuple[int, int], repeats: int) -> tuple[int, int, int]:
    """(hits, measured, failed) of `repeats` judgments: those not measured
    failed (or were compared with a failed baseline)."""
    k, n = hits
    return k, n, repeats - n


def _key(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def _criteria(judge: JudgeInfo) -> list[dict]:
    """The judge's criteria by name, each as the first graph that has it declares it."""
    first: dict[str, dict] = {}
    for c in judge.criteria:
        first.setdefault(c.name, {"name": c.name, "procedure": c.procedure, "type": str(c.type)})
    return list(first.values())


def _threshold_sink(judge: JudgeInfo):
    """The sink operator of a binary judge when it cuts a score at a
    threshold (a verdict derived from a score: an operator whose catalog
    entry has the `cuts` trait, as `transform.threshold`'s does), else None.
    For a judge of several graphs, the one such operator every graph has
    (the same node cut at the same point), else None: the block reads one
    score's node of every item."""
    if judge.type != "binary":
        return None
    ops = load_catalog().operators
    found = []
    for g in judge.by_id.values():
        sink = next((o for o in g.operators if o.name == g.sink and "cuts" in ops[o.operator].traits), None)
        if sink is None:
            return None
        found.append(sink)
    first = found[0]
    same = all(
        (o.ports["value"], o.params.get("at"), o.params.get("inclusive"))
        == (first.ports["value"], first.params.get("at"), first.params.get("inclusive"))
        for o in found
    )
    return first if same else None


def _one(per_candidate: dict | None) -> Any:
    """A pointwise node's one summarised value (None when absent)."""
    return next(iter(per_candidate.values()), None) if per_candidate else None


def build_report(data: AuditData) -> dict:
    """The report.json object."""
    return Reporter(data).report()


# --- text ----------------------------------------------------------------------


def _rate(r: dict | None, what: str = "") -> str:
    """A Rate or an Estimate as text: value [low, high], and for a Rate
    count/total, the failed units and the coverage; `not measured` when no
    unit was (never a number that stands for nothing)."""
    if r is None or r.get("value") is None:
        failed = f" ({r['failed']} failed)" if r and r.get("failed") else ""
        return NOT_MEASURED + failed
    interval = f" [{r['low']:.3f}, {r['high']:.3f}]" if r.get("low") is not None else " [no interval]"
    if "count" not in r:
        return f"{r['value']:+.3f}{interval}" if r.get("signed") else f"{r['value']:.3f}{interval}"
    failed = f", {r['failed']} failed" if r.get("failed") else ""
    coverage = f", coverage {r['coverage']:.3f}" if r.get("coverage") is not None else ""
    return f"{r['value']:.3f}{interval}  ({r['count']}/{r['total']}{' ' + what if what else ''}{failed}{coverage})"


def _line(name: str, figure: dict | None, what: str = "", indent: int = 2, width: int = 22) -> str:
    """One figure's line, labelled from the registry (audit/figures.py)."""
    return f"{' ' * indent}{label(name):<{width}} {_rate(figure, what)}"


def _diff(est: dict | None) -> dict | None:
    """A difference, shown signed."""
    return None if est is None else {**est, "signed": True}


def _decision(d: dict) -> str:
    """A Decision as text: its value, or `abstain`."""
    if d["status"] != "ok":
        return d["status"]
    return str(d["decision"]).lower() if isinstance(d["decision"], bool) else str(d["decision"])


def _value(s: dict) -> str:
    """A summary's verdict; one with failed repeats says how many failed
    and is never shown as the verdict alone (it is not stable)."""
    if s["status"] != "ok":
        return s["status"]
    v: Any = s["value"]
    shown = str(v).lower() if isinstance(v, bool) else str(v)
    failed = sum(d["status"] == "failed" for d in s.get("decisions", ()))
    return f"{shown} with {failed}/{len(s['decisions'])} repeats failed" if failed else shown


def _figure_lines(report: dict, max_flips: int) -> list[str]:
    """The headline figures of report.txt, each labelled from the registry."""
    m = report["metrics"]
    lines: list[str] = []
    if nothing_measured(report):
        lines.append(
            f"  NOTHING WAS MEASURED: all {report['counts']['judgments']} judgment(s) failed; no figure below has a "
            "value"
        )
    lines.append(_line("repeat_flip_rate", m["repeat_flip_rate"], "judgments"))
    b = m["baselines"]
    if b["unstable"] or b["failed"]:
        shown = ", ".join(b["unstable_items"][:max_flips]) + (", ..." if len(b["unstable_items"]) > max_flips else "")
        lines.append(
            f"  unstable baselines     {b['unstable']} item(s){': ' + shown if shown else ''}; {b['failed']} failed"
        )
    dec = m.get("decisions")
    if dec:
        if dec["tie_rate"] is not None:
            lines.append(_line("tie_rate", dec["tie_rate"], "judgments"))
        lines.append(_line("abstain_rate", dec["abstain_rate"], "judgments"))
        if dec["collapsed"] is not None:
            lines.append(f"  COLLAPSED: every one of {dec['judgments']} judgment(s) is `{_decision(dec['collapsed'])}`")
    inv, dirs = m["invariant"], m["directional"]
    if inv:
        lines.append(_line("flip_rate", inv["flip_rate"], "variants"))
        lines.append(_line("judgment_flip_rate", inv["judgment_flip_rate"], "judgments", indent=4, width=20))
        lines.append(_line("excess_over_noise", _diff(inv["excess_over_noise"]), indent=4, width=20))
        if inv["unstable_baseline"]["variants"]:
            lines.append(_line("flip_rate_stable_baseline", inv["flip_rate_stable_baseline"], "variants", 4, 20))
    if dirs:
        lines.append(_line("detection_rate", dirs["detection_rate"], "eligible") + f"; {dirs['ineligible']} ineligible")
        lines.append(_line("detection_over_noise", _diff(dirs["detection_over_noise"]), indent=4, width=20))
        lines.append(_line("score_shift", _diff(dirs["score_shift"]), indent=4, width=20))
        lines.append(_line("contradiction_rate", dirs["contradiction_rate"], "with room to rise"))
        if dirs["threshold"]:
            t = dirs["threshold"]
            lines.append(
                f"    `{t['node']}` (threshold {t['at']:g}): {label('score_fell')} {_rate(t['score_fell'])}; "
                f"{label('fell_without_crossing')} {_rate(t['fell_without_crossing'])}"
            )
    gold = m["gold"]
    if gold:
        for name in GOLD_FIGURES:
            if gold.get(name) is not None:
                what = "items" if "count" in gold[name] else ""
                lines.append(_line(name, gold[name], what))
    return lines


def _elements(v: Variant) -> dict:
    """The structured elements a variant changed (a document, a turn, a
    tool call), where it has any: what its flip is localised to."""
    elements = v.detail.get("elements")
    return {"elements": elements} if elements else {}


def element_words(elements: list[dict]) -> str:
    """The elements a variant changed, in words: `documents: document 3`."""
    out = []
    for e in elements:
        what = "order" if e["kind"] == "order" else f"{e['kind'].replace('_', ' ')} {e['key']}"
        if e.get("argument"):
            what += f" argument `{e['argument']}`"
        where = f"{e['field']}" + (f" of {e['candidate']}" if e.get("candidate") not in (None, "response") else "")
        out.append(f"{where}: {what}")
    return "; ".join(out)


def render_text(report: dict, max_flips: int = 10) -> str:
    """A few lines for a terminal and `report.txt`, printable."""
    j = report["judge"]
    head = (
        f"Audit of `{j['name']}` ({j['type']} judge) on {report['counts']['items']} items x "
        f"{report['suite']['repeats']} repeats, "
        f"{report['counts']['variants']} variants; sealed suite {report['suite']['sealed'][:19]}..."
    )
    lines = [head, *_figure_lines(report, max_flips)]
    # Operators that ran with no variant to judge say why (`none_accepted`), among those measured.
    unmeasured = {op["name"]: op["reason"] for op in report["operators"] if op["status"] == "run" and op["reason"]}
    if report["by_operator"] or unmeasured:
        lines.append("By operator:")
        for name in sorted({*report["by_operator"], *unmeasured}):
            if name in unmeasured:
                lines.append(f"  {name:<24} {unmeasured[name]}")
                continue
            block = report["by_operator"][name]
            if block["invariant"]:
                b = block["invariant"]
                lines.append(f"  {name:<24} {label('flip_rate')} {_rate(b['flip_rate'], 'variants')}")
                for fig in ("tie_rate_change", "abstain_rate_change"):
                    if b.get(fig) is not None:
                        lines.append(f"  {'':<24} {label(fig)} {_rate(_diff(b[fig]))}")
            if block["directional"]:
                b = block["directional"]
                lines.append(f"  {name:<24} {label('detection_rate')} {_rate(b['detection_rate'], 'eligible')}")
    skipped = [op for op in report["operators"] if op["status"] == "skipped"]
    if skipped:
        lines.append("Skipped:")
        lines += [f"  {op['name']}: {op['reason']}" for op in skipped]
    for title, hit, findings in (
        ("Flips", "flipped", report["flips"]),
        ("Missed degradations", "missed", report["misses"]),
    ):
        if not findings:
            continue
        # A failed variant measured nothing: listed to look at, never counted as a flip or a miss.
        failed = sum(f["outcome"] == "failed" for f in findings)
        lines.append(f"{title} ({len(findings) - failed} {hit}, {failed} failed):")
        for f in findings[:max_flips]:
            moved = sorted({x["node"] for x in f["localization"]["moved"] if x["kind"] == "criterion"})
            where = f"; moved: {', '.join(moved)}" if moved else ""
            if f.get("elements"):
                where += f"; changed {element_words(f['elements'])}"
            if f.get("baseline_stability") == "unstable":
                where += "; unstable baseline"
            lines.append(f"  {f['variant']}: {_value(f['baseline'])} -> {_value(f['result'])} ({f['outcome']}){where}")
        if len(findings) > max_flips:
            lines.append(f"  ... and {len(findings) - max_flips} more in report.json")
    lines += [f"Note: {n}" for n in report["notes"]]
    lines += _usage_lines(report.get("usage") or {})
    if report.get("summary"):
        lines += summary_lines(report["summary"])
    # Item ids, variant names and the model's summary are data: no control
    # character of theirs reaches a terminal or report.txt.
    return printable("\n".join(lines) + "\n")


def _usage_lines(usage: dict) -> list[str]:
    """The calls an identical request of the audit answered instead of a
    server, per phase (`reused`: a criterion whose prompt a perturbation left
    as it was reuses the baseline's judgment); none when nothing was reused."""
    parts = [f"{name} {u['reused']}" for name, u in sorted(usage.items()) if u.get("reused")]
    return ["Reused, not sent (answered by an identical request of the audit): " + ", ".join(parts)] if parts else []
