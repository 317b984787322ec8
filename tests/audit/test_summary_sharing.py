"""Equal verdict summaries are held once (`Scorer.summary`), and only
summaries written alike are equal: True, 1 and 1.0, or 0.0 and -0.0, are
equal in Python and written differently in a report."""

from types import SimpleNamespace
from typing import cast

from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.metrics import Scorer


def _traces(*decisions):
    return [{"readout": {"status": "ok", "decision": d}} for d in decisions]


def test_equal_repeats_share_one_summary():
    scorer = Scorer(cast(JudgeInfo, SimpleNamespace(type="binary")), 0.0)  # a stand-in: the scorer reads only the type
    first = scorer.summary(_traces(True, True))
    assert scorer.summary(_traces(True, True)) is first
    assert scorer.summary([None, *_traces(True)]) is not first


def test_summaries_of_values_python_calls_equal_are_kept_apart():
    scorer = Scorer(cast(JudgeInfo, SimpleNamespace(type="binary")), 0.0)  # a stand-in: the scorer reads only the type
    written = [scorer.summary(_traces(d)).to_json()["value"] for d in (True, 1, 1.0, 0.0, -0.0)]
    assert [repr(v) for v in written] == ["True", "1", "1.0", "0.0", "-0.0"]
