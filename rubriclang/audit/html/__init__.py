"""The audit's HTML report: `DIR/report.html`, a self-contained page
rendered from `DIR/report.json` (docs/audit.md, "The HTML report")."""

from rubriclang.audit.html.page import render_html
from rubriclang.audit.html.write import write_html

__all__ = ["render_html", "write_html"]
