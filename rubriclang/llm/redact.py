"""Keeping the API key out of everything written or shown.

A server may echo what it was sent: an error body quoting the
`Authorization` header, a reply repeating the prompt's headers, a model
asked to. `Redactor` replaces the key, and every run of 8 or more of its
characters (a prefix, a tail, a piece cut off by a truncation), with `***`.
The client applies it to every error message and every reply before anyone
else sees them, so traces, the call cache, batch imports, compile logs and
audit reports inherit it; text is always redacted before it is shortened.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from rubriclang.llm.client import Completion

MASK = "***"
# The shortest run of the key's characters that is hidden: shorter runs
# (`sk-`, `Bear`) are everyday text.
FRAGMENT = 8
# Every 8-character piece of the key contains one of its 4-character pieces
# that start at a multiple of 4; looking for those first (at C speed) makes
# the common case, text with no piece of the key, cheap.
_PROBE = 4


class Redactor:
    """Hides one secret. With no secret (None or empty), changes nothing."""

    def __init__(self, secret: str | None):
        self.secret = secret or None
        self._grams: frozenset[str] = frozenset()
        self._probes: tuple[str, ...] = ()
        # Whether the key reads the same inside a JSON string (no quote,
        # backslash or control character to escape).
        self._plain_in_json = (
            self.secret is not None and json.dumps(self.secret, ensure_ascii=False)[1:-1] == self.secret
        )
        if self.secret and len(self.secret) >= FRAGMENT:
            s = self.secret
            self._grams = frozenset(s[i : i + FRAGMENT] for i in range(len(s) - FRAGMENT + 1))
            self._probes = tuple(dict.fromkeys(s[i : i + _PROBE] for i in range(0, len(s) - _PROBE + 1, _PROBE)))

    def text(self, text: str) -> str:
        """`text` with the key and every 8+ character piece of it masked (a
        key shorter than 8 characters is masked where it appears whole)."""
        if self.secret is None or not text:
            return text
        if not self._grams:
            return text.replace(self.secret, MASK)
        spans = self._spans(text)
        if not spans:
            return text
        out, at = [], 0
        for start, end in spans:
            out.append(text[at:start])
            out.append(MASK)
            at = end
        out.append(text[at:])
        return "".join(out)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """The merged ranges of `text` covered by 8-character pieces of the key."""
        starts = set()
        for probe in self._probes:
            j = text.find(probe)
            while j != -1:
                # A piece holding this occurrence of the probe starts at most 4 before it.
                for i in range(max(0, j - (FRAGMENT - _PROBE)), j + 1):
                    if text[i : i + FRAGMENT] in self._grams:
                        starts.add(i)
                j = text.find(probe, j + 1)
        spans: list[tuple[int, int]] = []
        for i in sorted(starts):
            if spans and i <= spans[-1][1]:
                spans[-1] = (spans[-1][0], i + FRAGMENT)
            else:
                spans.append((i, i + FRAGMENT))
        return spans

    def json(self, value: Any) -> Any:
        """A JSON value with every string in it redacted (keys too)."""
        if self.secret is None or value is None:
            return value
        if isinstance(value, (list, dict)) and self._plain_in_json:
            # Logprobs are thousands of small strings: one look at their JSON
            # text (at C speed) usually shows there is nothing to redact.
            try:
                blob = json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError):
                blob = None
            if blob is not None and not (self._spans(blob) if self._grams else self.secret in blob):
                return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            # A string shorter than the shortest hidden run cannot hold one.
            return value if self.secret is None or len(value) < min(FRAGMENT, len(self.secret)) else self.text(value)
        if isinstance(value, list):
            return [self._walk(v) for v in value]
        if isinstance(value, dict):
            return {self._walk(k): self._walk(v) for k, v in value.items()}
        return value

    def completion(self, completion: Completion) -> Completion:
        """A `Completion` with its text, model and logprobs redacted."""
        if self.secret is None:
            return completion
        return attrs.evolve(
            completion,
            text=self.json(completion.text),
            model=self.json(completion.model),
            logprobs=self.json(completion.logprobs),
        )


__all__ = ["FRAGMENT", "MASK", "Redactor"]
