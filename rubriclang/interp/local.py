"""The local criterion backend: rules, human annotations and recorded values.

It runs every procedure whose catalog entry holds a judging function
(`ProcedureImpl.judge`: the standard ones in `stdlib_ops/judges.py`, a
plugin's in its own package), in-process and deterministically.
"""

from __future__ import annotations

from collections.abc import Callable

from rubriclang.catalog import load_catalog
from rubriclang.interp.backend import Judgment, JudgmentRequest
from rubriclang.interp.tables import ValueTable

LocalJudge = Callable[[JudgmentRequest, "LocalBackend"], Judgment]


class LocalBackend:
    """Runs every procedure of the catalog whose entry is `local`; the
    annotation and recorded-value tables are the run's (`--annotations`,
    `--recorded`)."""

    name = "local"

    def __init__(self, annotations: ValueTable | None = None, recorded: ValueTable | None = None):
        self.annotations = annotations or ValueTable()
        self.recorded = recorded or ValueTable()
        self._judges: dict[str, LocalJudge] = {}  # procedure -> its entry's judge, looked up once

    @staticmethod
    def handles(procedure: str) -> bool:
        """Whether the procedure's catalog entry names this backend (`local`,
        which the loader holds to having a `judge`)."""
        return load_catalog().hooks(procedure).backend == "local"

    async def judge(self, request: JudgmentRequest) -> Judgment:
        return self.judge_now(request)

    def judge_known(self, requests: list[JudgmentRequest]) -> list[Judgment | None]:
        """Every judgment at once: local procedures never wait. None for all
        from a subclass with its own `judge`, which must then be awaited."""
        if type(self).judge is not LocalBackend.judge:
            return [None] * len(requests)
        return [self.judge_now(r) for r in requests]

    def judge_now(self, request: JudgmentRequest) -> Judgment:
        """The judgment of the procedure's entry's `judge`."""
        procedure = request.criterion.procedure
        fn = self._judges.get(procedure)
        if fn is None:
            hook = load_catalog().hooks(procedure).judge
            if hook is None:  # the engine routes only the procedures `handles` accepts
                raise ValueError(f"`{procedure}` is not a local procedure")
            fn = self._judges[procedure] = hook
        return fn(request, self)
