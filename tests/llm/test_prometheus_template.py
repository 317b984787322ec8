"""`llm.rate { template = prometheus }`: Prometheus's absolute-grading prompt
(word for word, with or without a reference; the item's rubric or one built
from the criterion), its `[RESULT] n` reader (the last marker; never clamped),
and a whole judgment against a scripted server, re-asked after a reply
without a marker."""

from __future__ import annotations

import asyncio

import pytest

from rubriclang.interp.backend import JudgmentRequest
from rubriclang.interp.items import Item, ItemError, item_from_json
from rubriclang.llm.backend import LLMBackend
from rubriclang.llm.client import Sampling
from rubriclang.llm.parsing import parse
from rubriclang.llm.prompting import PromptError, render

from .conftest import criterion

# prometheus-eval's ABS_SYSTEM_PROMPT, ABSOLUTE_PROMPT and ABSOLUTE_PROMPT_WO_REF
# (libs/prometheus-eval/prometheus_eval/prompts.py @ 485d2b4e, Apache-2.0).
SYSTEM = (
    "You are a fair judge assistant tasked with providing clear, objective feedback based on specific criteria, "
    "ensuring each assessment reflects the absolute standards set for performance."
)
_STEPS = """1. Write a detailed feedback that assess the quality of the response strictly based on the given score rubric, not evaluating in general.
2. After writing a feedback, write a score that is an integer between 1 and 5. You should refer to the score rubric.
3. The output format should look as follows: "(write a feedback for criteria) [RESULT] (an integer number between 1 and 5)"
4. Please do not generate any other opening, closing, and explanations."""  # noqa: E501 (verbatim prompt or graph text)
ABSOLUTE_PROMPT = (
    "###Task Description:\nAn instruction (might include an Input inside it), a response to evaluate, a reference "
    "answer that gets a score of 5, "
    "and a score rubric representing a evaluation criteria are given.\n"
    + _STEPS
    + "\n\n###The instruction to evaluate:\n{instruction}\n\n"
    "###Response to evaluate:\n{response}\n\n###Reference Answer (Score 5):\n{reference_answer}\n\n###Score Rubrics:\n"
    "{rubric}\n\n###Feedback: "
)
ABSOLUTE_PROMPT_WO_REF = (
    "###Task Description:\nAn instruction (might include an Input inside it), a response to evaluate, "
    "and a score rubric representing a evaluation criteria are given.\n"
    + _STEPS
    + "\n\n###The instruction to evaluate:\n{instruction}\n\n"
    "###Response to evaluate:\n{response}\n\n###Score Rubrics:\n{rubric}\n\n###Feedback: "
)

ANCHORS = '{ 5: "Every step is right.", 1: "Wrong throughout.", 3: "Right answer, a wrong step." }'
PROMETHEUS = criterion(
    'criterion c: ordinal[1, 5] = llm.rate { question = """\n  Is the\n  arithmetic right?\n'
    f'  """, anchors = {ANCHORS}, template = prometheus }}'
)
WITH_REF = criterion(
    'criterion c: ordinal[1, 5]? = llm.rate { question = "Right?", with_reference = true, template = prometheus, '
    "on_error = abstain }"
)
OWN_RUBRIC = (
    "[Is the arithmetic right?]\nScore 1: Wrong.\nScore 2: Mostly wrong.\nScore 3: Half right.\n"
    "Score 4: Mostly right.\nScore 5: Right."
)
ITEM = Item("1", "What is 2 + 2?", {"response": "It is {{input}} 4."}, reference="#### 4", rubric=OWN_RUBRIC)
BARE = Item("2", "What is 3 + 3?", {"response": "6"})


def messages(crit, item):
    return render(crit, item, "response").request.messages


def test_the_prompt_is_prometheus_evals_without_a_reference():
    built = (
        "[Is the arithmetic right?]\nScore 1: Wrong throughout.\nScore 3: Right answer, a wrong step.\n"
        "Score 5: Every step is right."
    )
    system, user = messages(PROMETHEUS, BARE)
    assert system == {"role": "system", "content": SYSTEM}
    # The template format trims the blank after `###Feedback:`; nothing else differs.
    assert (
        user["content"]
        == ABSOLUTE_PROMPT_WO_REF.format(instruction="What is 3 + 3?", response="6", rubric=built).rstrip()
    )


def test_the_prompt_is_prometheus_evals_with_the_reference_and_the_items_own_rubric():
    user = messages(WITH_REF, ITEM)[1]["content"]
    expected = ABSOLUTE_PROMPT.format(
        instruction="What is 2 + 2?", response="It is {{input}} 4.", reference_answer="#### 4", rubric=OWN_RUBRIC
    )
    assert user == expected.rstrip()


def test_the_items_rubric_replaces_the_one_built_from_question_and_anchors():
    assert OWN_RUBRIC in messages(PROMETHEUS, ITEM)[1]["content"]
    assert "Wrong throughout." not in messages(PROMETHEUS, ITEM)[1]["content"]
    assert (
        "[Right?]\n\n###Feedback:" in messages(WITH_REF, Item("3", "Q", {"response": "x"}, reference="y"))[1]["content"]
    )


def test_a_reference_is_required_only_when_asked_for():
    with pytest.raises(PromptError, match="no `reference`"):
        render(WITH_REF, BARE, "response")
    assert "Reference Answer" not in messages(PROMETHEUS, ITEM)[1]["content"]


def test_the_request_asks_for_free_text_and_names_its_template():
    rendered = render(PROMETHEUS, ITEM, "response")
    assert rendered.request.response_format is None and rendered.template == "prometheus@v1"
    assert rendered.prompt_hash != render(PROMETHEUS, BARE, "response").prompt_hash


def test_an_items_rubric_must_be_a_string():
    assert item_from_json({"id": "1", "response": "x", "rubric": OWN_RUBRIC}, "f:1").rubric == OWN_RUBRIC
    assert item_from_json({"id": "1", "response": "x"}, "f:1").rubric is None
    with pytest.raises(ItemError, match="`rubric` must be a string"):
        item_from_json({"id": "1", "response": "x", "rubric": {"1": "Bad."}}, "f:1")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("The sum is right and every step is shown. [RESULT] 4", 4),
        ("Feedback: the answer is right.\n[RESULT] (5)\n", 5),
        ("Good.  [RESULT]  [2]  \n\n", 2),
        ("It quotes the format, [RESULT] (an integer number between 1 and 5), then grades. [RESULT] 3", 3),
        ("Score 5 would need more care. [RESULT] 1 ... on reflection [RESULT] 2", 2),
        ("Right. [RESULT] 4.", 4),
    ],
)
def test_the_score_is_read_after_the_last_result_marker(text, value):
    result = parse(PROMETHEUS, text)
    assert (result.value, result.error, result.method) == (value, None, "result")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("Excellent. [RESULT] 7", "`[RESULT]`: 7 lies outside `ordinal[1, 5]`"),
        ("Poor. [RESULT] 0", "`[RESULT]`: 0 lies outside `ordinal[1, 5]`"),
        ("[RESULT] 4 at first, but really [RESULT] 6", "`[RESULT]`: 6 lies outside `ordinal[1, 5]`"),
        ("Between two. [RESULT] 3.5", "`[RESULT]`: 3.5 is not an integer"),
        ("A fine answer. [RESULT] four", "the last `[RESULT]` is not followed by a score"),
        ('A fine answer, Score: 4 {"score": 4}', "no `[RESULT]` found"),
        ("", "no `[RESULT]` found"),
    ],
)
def test_a_missing_or_out_of_range_result_is_a_failure_never_clamped(text, error):
    result = parse(PROMETHEUS, text)
    assert result.value is None and result.error is not None and result.error.startswith(error)


def replies(*texts):
    """An answer function giving `texts` in turn (the last one repeated)."""
    queue = list(texts)
    return lambda body: queue.pop(0) if len(queue) > 1 else queue[0]


def judge(server, make_client, crit, item):
    async def go():
        backend = LLMBackend(make_client(server.url), None, Sampling())
        try:
            return await backend.judge(JudgmentRequest(item, "response", crit))
        finally:
            await backend.aclose()

    return asyncio.run(go())


def test_a_judgment_keeps_the_feedback_and_names_the_template(fault_server, make_client):
    server = fault_server(answer=replies("The sum is right, with every step shown. [RESULT] 5"))
    j = judge(server, make_client, WITH_REF, ITEM)
    assert (j.value, j.error, j.attempts) == (5, None, 1)
    assert j.raw == {"template": "prometheus@v1", "text": "The sum is right, with every step shown. [RESULT] 5"}
    assert j.prompt_hash == render(WITH_REF, ITEM, "response").prompt_hash
    assert "response_format" not in server.chats[0].body


def test_a_reply_without_a_result_is_asked_again_for_one(fault_server, make_client):
    server = fault_server(answer=replies("The sum is right. I would give it a 4.", "The sum is right. [RESULT] 4"))
    j = judge(server, make_client, PROMETHEUS, ITEM)
    assert (j.value, j.attempts) == (4, 2)
    retry = server.chats[1].body["messages"]
    assert retry[:2] == server.chats[0].body["messages"]
    assert retry[2] == {"role": "assistant", "content": "The sum is right. I would give it a 4."}
    assert retry[3]["role"] == "user" and "no `[RESULT]` found" in retry[3]["content"]
    assert retry[3]["content"].endswith("your feedback, then [RESULT] and an integer from 1 to 5.")


def test_a_result_that_stays_out_of_range_fails_the_judgment_with_the_feedback(fault_server, make_client):
    server = fault_server(answer=replies("Outstanding. [RESULT] 9"))
    j = judge(server, make_client, PROMETHEUS, ITEM)
    assert j.value is None and len(server.chats) == 3
    assert j.error == "unreadable answer after 3 replies: `[RESULT]`: 9 lies outside `ordinal[1, 5]`"
    assert j.raw == {"template": "prometheus@v1", "text": "Outstanding. [RESULT] 9"}
