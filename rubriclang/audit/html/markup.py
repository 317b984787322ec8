"""Building HTML that cannot carry markup from the data.

Every piece of text from a report goes through `el`, which escapes it;
only `Markup` (what `el` itself returns, or a constant of this package) is
inserted as it is. Attribute names come from the code, never from data, and
every attribute value is quoted and escaped. Ids and in-page links are
derived from data by hashing, so a report's ids never reach an attribute.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterable
from typing import Union

_TAG = re.compile(r"^[a-z][a-z0-9]*$")
_ATTR = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]*$")  # SVG has viewBox
_ID = re.compile(r"^[a-z]+-[0-9a-f]+$")
# Elements with no end tag (HTML) or written self-closed (SVG).
_VOID = frozenset({"br", "hr", "meta", "wbr", "line", "rect", "circle", "path"})


class Markup(str):
    """Text that is already HTML: inserted without escaping (by Jinja2's
    autoescape too, which reads `__html__`)."""

    def __html__(self) -> str:
        return self


Child = Union["Markup", str, int, float, None, Iterable]


def esc(text: object) -> Markup:
    """`text` as HTML text, quotes included (safe in attributes too)."""
    return Markup(html.escape(str(text), quote=True))


def join(children: Iterable[Child]) -> Markup:
    """Children as markup: Markup as is, anything else escaped, None and
    False left out, lists and generators flattened."""
    out: list[str] = []
    for child in children:
        if child is None or child is False:
            continue
        if isinstance(child, Markup):
            out.append(child)
        elif isinstance(child, (str, int, float)):
            out.append(esc(child))
        else:
            out.append(join(child))
    return Markup("".join(out))


def el(tag: str, attrs: dict[str, object] | None = None, *children: Child) -> Markup:
    """The element `<tag attrs>children</tag>`. Attributes with the value
    None or False are left out; True writes the bare attribute name."""
    if not _TAG.match(tag):
        raise ValueError(f"not a tag name: {tag!r}")
    parts = [tag]
    for name, value in (attrs or {}).items():
        if not _ATTR.match(name):
            raise ValueError(f"not an attribute name: {name!r}")
        if value is None or value is False:
            continue
        parts.append(name if value is True else f'{name}="{esc(value)}"')
    opening = "<" + " ".join(parts)
    if tag in _VOID and not children:
        return Markup(opening + ">" if tag in ("br", "hr", "meta", "wbr") else opening + "/>")
    return Markup(f"{opening}>{join(children)}</{tag}>")


def anchor(kind: str, key: str) -> str:
    """A stable element id for the data key `key`: `kind-` and a hash, so
    the id is valid, unique in practice and free of the data's characters."""
    return f"{kind}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}"


def link(target: str, *children: Child, cls: str | None = None) -> Markup:
    """A link to the in-page element with id `target` (from `anchor`)."""
    if not _ID.match(target):
        raise ValueError(f"not an anchor id: {target!r}")
    return el("a", {"href": "#" + target, "class": cls}, *children)
