"""A page's elements, attributes and text, read with the standard HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import attrs
from attrs import field


@attrs.frozen
class Element:
    tag: str
    attrs: dict


class Dom(HTMLParser):
    """Every start tag with its attributes, and the text (entities decoded)."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.texts: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append(Element(tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_data(self, data):
        self.texts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def tags(self) -> set[str]:
        return {e.tag for e in self.elements}

    def ids(self) -> list[str]:
        return [e.attrs["id"] for e in self.elements if "id" in e.attrs]

    def hrefs(self) -> list[str]:
        return [e.attrs["href"] for e in self.elements if "href" in e.attrs]

    def with_class(self, cls: str) -> list[Element]:
        return [e for e in self.elements if cls in (e.attrs.get("class") or "").split()]


_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"})


@attrs.define
class Node:
    """An element with its children, for assertions on a page's structure."""

    tag: str
    attrs: dict
    children: list[Any] = field(factory=list)  # Node or str

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def elements(self):
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.elements()

    def all(self, cls: str, tag: str | None = None) -> list[Node]:
        """The descendants with class `cls` (and tag `tag`), in document order."""
        return [e for e in self.elements() if cls in e.classes and tag in (None, e.tag)]

    def kids(self, cls: str) -> list[Node]:
        """The children with class `cls`."""
        return [c for c in self.children if isinstance(c, Node) and cls in c.classes]


class _TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def tree(page: str) -> Node:
    """The page as a tree of elements (end tags matched to their start)."""
    b = _TreeBuilder()
    b.feed(page)
    b.close()
    return b.root
