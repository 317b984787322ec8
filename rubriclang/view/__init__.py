"""`rbg view`: a local, read-only viewer over traces, evaluation outputs,
audit directories and rubric diffs (docs/view.md).

Needs the optional extra `rubriclang[view]` (Starlette, uvicorn, Jinja2);
nothing outside this package imports it, so `rbg check`, `fmt` and `run`
never pay for it.
"""
