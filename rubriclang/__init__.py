"""rubriclang: typed rubric graphs for LLM judges.

`rubriclang.load(path)` returns a Rubric with `evaluate(item)` and
`evaluate_many(items)`. The API is imported lazily so that the command line's
`check` and `fmt` start fast.
"""

__version__ = "0.1.0"

_API = {"load", "loads", "Rubric", "RubricError"}


def __getattr__(name):
    if name in _API:
        from rubriclang import api

        return getattr(api, name)
    raise AttributeError(f"module 'rubriclang' has no attribute {name!r}")


__all__ = sorted(_API)
