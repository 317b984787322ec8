"""rubriclang: typed rubric graphs for LLM judges.

`rubriclang.load(path)` returns a Rubric with `evaluate(item)` and
`evaluate_many(items)`. The API is imported lazily so that the command line's
`check` and `fmt` start fast.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what __getattr__ gives, for type checkers
    from rubriclang.api import Rubric as Rubric
    from rubriclang.api import RubricError as RubricError
    from rubriclang.api import load as load
    from rubriclang.api import loads as loads

__version__ = "0.1.0"

_API = {"load", "loads", "Rubric", "RubricError"}


def __getattr__(name: str) -> object:
    if name in _API:
        from rubriclang import api

        return getattr(api, name)
    raise AttributeError(f"module 'rubriclang' has no attribute {name!r}")


__all__ = sorted(_API)
