"""A page's elements, attributes and text, read with the standard HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser

import attrs


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
