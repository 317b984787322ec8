"""Sealed suites (stable hash, reuse with another judge, tampering) and
resuming an interrupted audit."""

from __future__ import annotations

import asyncio
import json

from rubriclang.audit.pipeline import Audit, AuditRequest
from rubriclang.audit.seal import read_sealed
from rubriclang.audit.suite import load_suite
from rubriclang.checker import check_source
from rubriclang.interp.backend import Judgment
from rubriclang.interp.local import LocalBackend

from .helpers import GSM8K_JUDGE, report

BODY = 'repeats = 2\noperators = ["typo_noise", "partial_completion"]\n[options.typo_noise]\nfields = ["response"]\n'


def test_the_sealed_hash_is_stable_across_audits(rbg, suite, tmp_path):
    path = suite(BODY)
    rbg("audit", path, "--out", tmp_path / "one")
    rbg("audit", path, "--out", tmp_path / "two")
    one, two = (json.loads((tmp_path / d / "sealed.json").read_text()) for d in ("one", "two"))
    assert one["hash"] == two["hash"] == report(tmp_path / "one")["suite"]["sealed"]
    assert (tmp_path / "one" / "sealed.json").read_bytes() == (tmp_path / "two" / "sealed.json").read_bytes()
    assert len(one["variants"]) == 24 and one["counts"]["typo_noise"]["accepted"] == 12


def test_another_judge_reuses_exactly_the_sealed_variants(rbg, suite, tmp_path):
    rbg("audit", suite(BODY), "--out", tmp_path / "first")
    # Another judge: exact matching instead of numeric.
    other = tmp_path / "exact.rbg"
    other.write_text(GSM8K_JUDGE.read_text().replace("mode = numeric", "mode = exact"))
    result = rbg(
        "audit",
        suite(BODY, name="other.toml", judge=other),
        "--out",
        tmp_path / "second",
        "--sealed",
        tmp_path / "first" / "sealed.json",
    )
    assert result.exit_code == 0, result.output
    first, second = report(tmp_path / "first"), report(tmp_path / "second")
    assert second["suite"]["sealed"] == first["suite"]["sealed"]
    assert second["judge"]["hash"] != first["judge"]["hash"]
    assert sorted(v for e in second["by_item"].values() for v in e["variants"]) == sorted(
        v for e in first["by_item"].values() for v in e["variants"]
    )


def test_a_suite_sealed_before_prompt_versions_were_recorded_keeps_its_hash_and_reads_as_version_1(
    rbg, suite, tmp_path
):
    rbg("audit", suite(BODY), "--out", tmp_path / "first")
    sealed = tmp_path / "first" / "sealed.json"
    doc = json.loads(sealed.read_text())
    assert doc["prompts"] == {"generate": "generate.v2", "validate": "validate.v2"}
    del doc["prompts"]
    sealed.write_text(json.dumps(doc))
    old, _ = read_sealed(str(sealed))
    assert old.hash == doc["hash"] and old.prompts == {"generate": "generate.v1", "validate": "validate.v1"}
    result = rbg("audit", suite(BODY), "--out", tmp_path / "again", "--sealed", sealed)
    assert result.exit_code == 0, result.output
    assert report(tmp_path / "again")["suite"]["sealed"] == doc["hash"]


def test_a_changed_sealed_suite_is_refused(rbg, suite, tmp_path):
    rbg("audit", suite(BODY), "--out", tmp_path / "first")
    sealed = tmp_path / "first" / "sealed.json"
    doc = json.loads(sealed.read_text())
    doc["variants"][0]["changes"]["candidates"][0][1] = "The answer is 7."
    sealed.write_text(json.dumps(doc))
    result = rbg("audit", suite(BODY), "--out", tmp_path / "again", "--sealed", sealed)
    assert result.exit_code == 2 and "changed after it was sealed" in result.output


def test_a_folder_holding_another_judges_audit_is_refused(rbg, suite, tmp_path):
    rbg("audit", suite(BODY), "--out", tmp_path / "out")
    other = tmp_path / "exact.rbg"
    other.write_text(GSM8K_JUDGE.read_text().replace("mode = numeric", "mode = exact"))
    result = rbg("audit", suite(BODY, name="other.toml", judge=other), "--out", tmp_path / "out")
    assert result.exit_code == 2 and "another judge" in result.output


class Counting(LocalBackend):
    """The local backend, counting its judgments (and failing some, on demand)."""

    def __init__(self, fail: bool = False):
        super().__init__()
        self.calls = 0
        self.fail = fail

    async def judge(self, request):
        self.calls += 1
        if self.fail:
            return Judgment.failed("the backend is down")
        return self.judge_now(request)


def _audit(suite_path, out, backend, retry_errors=False):
    s = load_suite(str(suite_path))
    graph = check_source(GSM8K_JUDGE.read_text(), str(GSM8K_JUDGE)).graph
    assert graph is not None
    return asyncio.run(
        Audit(AuditRequest(s, str(out), retry_errors=retry_errors), graph, extra_backends=[backend]).run()
    )


def test_an_interrupted_audit_resumes_where_it_stopped(suite, tmp_path):
    path = suite(BODY)
    full = _audit(path, tmp_path / "full", Counting())
    runs = (tmp_path / "full" / "runs.jsonl").read_text().splitlines(keepends=True)
    assert len(runs) == (12 + 24) * 2
    # A kill part-way: 30 judgments written, the 31st torn.
    (tmp_path / "cut").mkdir()
    for name in ("sealed.json", "audit.json"):
        (tmp_path / "cut" / name).write_bytes((tmp_path / "full" / name).read_bytes())
    (tmp_path / "cut" / "runs.jsonl").write_text("".join(runs[:30]) + runs[30][:40])
    backend = Counting()
    resumed = _audit(path, tmp_path / "cut", backend)
    assert backend.calls == len(runs) - 30
    assert resumed == full
    assert (tmp_path / "cut" / "runs.jsonl").read_text() == "".join(runs)


def test_failed_judgments_are_never_stable_and_can_be_judged_again(suite, tmp_path):
    path = suite(BODY)
    broken = _audit(path, tmp_path / "out", Counting(fail=True))
    inv = broken["metrics"]["invariant"]
    assert (inv["stable"], inv["failed"]) == (0, 12)
    # Nothing was measured: not a flip rate of 1 (total position bias), but none at all.
    noise = broken["metrics"]["repeat_flip_rate"]
    assert (noise["value"], noise["low"], noise["high"], noise["total"], noise["coverage"]) == (None,) * 3 + (0, 0.0)
    assert inv["flip_rate"]["value"] is None and inv["flip_rate"]["failed"] == 12
    assert broken["counts"]["failed_judgments"] == broken["counts"]["judgments"]
    backend = Counting()
    fixed = _audit(path, tmp_path / "out", backend, retry_errors=True)
    assert backend.calls == (12 + 24) * 2
    assert fixed["metrics"]["invariant"]["stable"] == 12 and fixed["counts"]["failed_judgments"] == 0
