"""A changed suite is never silently resumed (issue 25, item 15), and a
sealed suite is never reused for items whose content changed under the
same ids (issue 24, item 1): rerunning an audit into its folder after
editing the suite's operators, options, limit, seed, repeats or items is
refused, saying what changed, before anything is judged or written."""

from __future__ import annotations

import json

import pytest

from .helpers import gsm8k_items, report

BODY = 'repeats = 2\noperators = ["typo_noise", "partial_completion"]\n[options.typo_noise]\nfields = ["response"]\n'


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def audited(rbg, suite, tmp_path):
    """(the suite's path, the folder of its finished audit)."""
    path = suite(BODY)
    out = tmp_path / "out"
    result = rbg("audit", path, "--out", out)
    assert result.exit_code == 0, result.output
    return path, out


def test_rerunning_an_unchanged_suite_resumes_to_the_same_report(rbg, audited):
    path, out = audited
    before = report(out)
    again = rbg("audit", path, "--out", out)
    assert again.exit_code == 0, again.output
    assert report(out) == before


@pytest.mark.parametrize(
    "body, said",
    [
        (
            BODY.replace('"partial_completion"', '"partial_completion", "criterion_reorder"'),
            "operators added: criterion_reorder",
        ),
        (BODY.replace(', "partial_completion"', ""), "operators removed: partial_completion"),
        (BODY.replace('fields = ["response"]', 'fields = ["input", "response"]'), "defined differently"),
        ("seed = 3\n" + BODY, "`seed` 0 -> 3"),
        ("limit = 6\n" + BODY, "`limit` unset -> 6"),
        (BODY.replace("repeats = 2", "repeats = 3"), "`repeats` 2 -> 3"),
    ],
)
def test_rerunning_a_changed_suite_into_its_folder_is_refused_saying_what_changed(rbg, suite, audited, body, said):
    _, out = audited
    before = _snapshot(out)
    result = rbg("audit", suite(body), "--out", out)
    assert result.exit_code == 2
    assert "the suite has changed since" in result.output and said in result.output
    assert "give a new --out" in result.output
    assert _snapshot(out) == before


def test_a_limit_that_drops_items_is_named_as_other_items(rbg, suite, audited):
    _, out = audited
    result = rbg("audit", suite("limit = 6\n" + BODY), "--out", out)
    assert result.exit_code == 2 and "the items: 12 sealed, 6 now" in result.output


def test_changed_item_content_under_the_same_ids_is_refused_at_its_line(rbg, audited, items_file):
    path, out = audited
    rows = gsm8k_items()
    rows[4] = {**rows[4], "response": "The answer is 12345."}
    items_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = rbg("audit", path, "--out", out)
    assert result.exit_code == 2
    assert f"the content of 1 item(s): {items_file}:5 (`{rows[4]['id']}`)" in result.output


def test_a_suite_sealed_before_its_settings_were_recorded_is_still_checked_for_operators(rbg, suite, audited):
    path, out = audited
    sealed = out / "sealed.json"
    doc = json.loads(sealed.read_text())
    del doc["suite"]  # as sealed before this field existed: the hash does not cover it
    sealed.write_text(json.dumps(doc))
    assert rbg("audit", path, "--out", out).exit_code == 0
    result = rbg("audit", suite(BODY.replace(', "partial_completion"', "")), "--out", out)
    assert result.exit_code == 2 and "operators removed: partial_completion" in result.output


def test_a_sealed_suite_is_not_reused_for_items_whose_content_changed(rbg, suite, audited, items_file, tmp_path):
    path, out = audited
    rows = gsm8k_items()
    # Relabelled gold only: what is judged is unchanged, so the sealed suite applies.
    items_file.write_text("".join(json.dumps({**r, "gold": not r["gold"]}) + "\n" for r in rows))
    ok = rbg("audit", path, "--out", tmp_path / "relabelled", "--sealed", out / "sealed.json")
    assert ok.exit_code == 0, ok.output
    rows[2] = {**rows[2], "response": "The answer is 12345."}
    items_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = rbg("audit", path, "--out", tmp_path / "stale", "--sealed", out / "sealed.json")
    assert result.exit_code == 2
    assert "1 item(s) of the suite differ from the items of the same ids in the sealed suite" in result.output
    assert f"{items_file}:3 (`{rows[2]['id']}`)" in result.output
    assert not (tmp_path / "stale" / "sealed.json").exists()


def test_a_judgment_recorded_for_other_content_is_refused_on_resume(rbg, audited):
    path, out = audited
    runs = out / "runs.jsonl"
    lines = runs.read_text().splitlines()
    rec = json.loads(lines[6])
    rec["trace"]["item_hash"] = "sha256:" + "0" * 64
    lines[6] = json.dumps(rec)
    runs.write_text("\n".join(lines) + "\n")
    result = rbg("audit", path, "--out", out)
    assert result.exit_code == 2
    assert f"{runs}:7: 1 judgment(s) are of other content" in result.output


def test_the_recorded_settings_keep_no_token_of_a_model_url(rbg, suite, tmp_path):
    body = BODY + '[generator]\nbase_url = "http://127.0.0.1:9/v1?token=SECRET-TOKEN"\nmodel = "gen"\n'
    out = tmp_path / "tokened"
    result = rbg("audit", suite(body, name="tokened.toml"), "--out", out)
    assert result.exit_code == 0, result.output
    sealed = json.loads((out / "sealed.json").read_text())
    assert sealed["suite"]["generator"]["base_url"] == "http://127.0.0.1:9/v1?***"
    assert "SECRET-TOKEN" not in "".join(p.read_text() for p in out.iterdir() if p.is_file())


def test_a_value_table_whose_content_changed_is_a_changed_suite(rbg, suite, tmp_path):
    # human.annotation and recorded.value judgments read the tables by item id, outside the items.
    table = tmp_path / "recorded.jsonl"
    row = {"item": gsm8k_items()[0]["id"], "key": "score", "value": 3}
    table.write_text(json.dumps(row) + "\n")
    body = f'recorded = "{table}"\n' + BODY
    out = tmp_path / "tabled"
    assert rbg("audit", suite(body, name="tabled.toml"), "--out", out).exit_code == 0
    assert rbg("audit", suite(body, name="tabled.toml"), "--out", out).exit_code == 0
    table.write_text(json.dumps({**row, "value": 4}) + "\n")
    result = rbg("audit", suite(body, name="tabled.toml"), "--out", out)
    assert result.exit_code == 2 and "the `recorded` table (its content)" in result.output


def test_reseal_seals_a_changed_suite_anew_keeping_the_earlier_audit_aside_with_a_note(rbg, suite, audited):
    _, out = audited
    before = _snapshot(out)
    old_hash = json.loads(before["sealed.json"])["hash"]
    refused = rbg("audit", suite("seed = 3\n" + BODY), "--out", out)
    assert refused.exit_code == 2 and "--reseal" in refused.output
    result = rbg("audit", suite("seed = 3\n" + BODY), "--out", out, "--reseal")
    assert result.exit_code == 0, result.output
    aside = out / f"superseded-{old_hash.removeprefix('sha256:')[:12]}"
    assert {n: aside.joinpath(n).read_bytes() for n in before if aside.joinpath(n).exists()} == before
    new = report(out)
    assert json.loads((out / "sealed.json").read_text())["suite"]["seed"] == 3
    note = next(n for n in new["notes"] if n.startswith("sealed anew (--reseal)"))
    assert "`seed` 0 -> 3" in note and str(aside) in note
    # Now the folder is the new suite's: running it again resumes, with no note.
    again = rbg("audit", suite("seed = 3\n" + BODY), "--out", out)
    assert again.exit_code == 0, again.output
    assert not any(n.startswith("sealed anew") for n in report(out)["notes"])
    usage = rbg("audit", suite(BODY), "--out", out, "--reseal", "--sealed", aside / "sealed.json")
    assert usage.exit_code == 2 and "give one of them" in usage.output
