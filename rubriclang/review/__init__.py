"""Reviewing rubric changes: `rbg diff` (a semantic diff of two versions, with
its verdict impact on recorded traces) and `rbg graph` (pictures of a graph).

Stages: `canonical` (a checked graph as keyed subjects) -> `diff` (what
changed) -> `impact` (which decisions change) -> `render` (text, JSON,
Markdown); `view` -> `mermaid` / `dot` draw a graph; `gitrev` reads a side
from a git revision.
"""

from rubriclang.review.diff import GraphDiff, diff_graphs

__all__ = ["GraphDiff", "diff_graphs"]
