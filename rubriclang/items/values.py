"""`ListValue`: how a list field reaches the template engine (`rubriclang.template`)."""

from __future__ import annotations


class ListValue(str):
    """A list field's value for a template: its text, which `{{name}}`
    shows, and the elements a `{{#name}}` section is shown for (each a dict
    of value name -> str or ListValue). Empty, so falsy, when it has no
    elements."""

    elements: tuple[dict[str, str | ListValue], ...]

    def __new__(cls, text: str, elements: tuple[dict[str, str | ListValue], ...]) -> ListValue:
        self = super().__new__(cls, text if elements else "")
        self.elements = elements
        return self
