"""Sealed suites: the accepted variants, their items, the judge patches and
the operators' definitions, under one content hash.

A sealed suite is what makes two audits comparable: a later audit of
another judge (`--sealed PATH`) runs on exactly these variants. The hash
covers what decides the runs (items, variants, patches, operator
definitions), not the bookkeeping (counts, skipped operators, the
versions of the generator's and validator's prompts: the variants they made
are sealed themselves, and suites sealed before the versions were recorded
keep their hash).
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from rubriclang.audit import jsonscan
from rubriclang.audit.files import Lazy
from rubriclang.audit.perturbations import Perturbation
from rubriclang.audit.suite import ModelConfig, Suite
from rubriclang.audit.variants import Patch, Variant
from rubriclang.canonical import canonical_json
from rubriclang.interp.items import POINTWISE_CANDIDATE, Item, ItemError, item_from_json
from rubriclang.interp.trace import STALE_SHOWN, item_hash
from rubriclang.items.shape import ItemShape
from rubriclang.safeio import fsync_folder
from rubriclang.urls import shown_url

# /2 holds its items in the items-file format (`interp.items.item_to_json`);
# /1 held the Item's attributes, and is still read.
SCHEMA = "rubriclang.audit.sealed/2"
_SCHEMA_1 = "rubriclang.audit.sealed/1"
_HASHED = ("items", "operators", "patches", "variants")
# What suites sealed before `prompts` was recorded were made with.
_FIRST_PROMPTS = {"generate": "generate.v1", "validate": "validate.v1"}


class SealedError(Exception):
    """A sealed suite that cannot be read, or whose content does not match its hash."""


def content_hash(doc: dict, each: Callable[[str, int, Any], None] = lambda key, n, element: None) -> str:
    """The hash of a sealed document's content (the `_HASHED` fields): of
    their canonical JSON, taken an element of each list at a time, so that a
    document whose lists are read or made as they go (`jsonscan.Elements`,
    `files.Lazy`) is never encoded whole; `each(key, n, element)` is given
    every element of them as it is hashed."""
    digest = hashlib.sha256()
    for i, key in enumerate(_HASHED):
        digest.update(f"{',' if i else '{'}{canonical_json(key)}:".encode())
        value = doc[key]
        if isinstance(value, Sequence) and not isinstance(value, str):
            digest.update(b"[")
            for n, element in enumerate(value):
                digest.update((b"," if n else b"") + canonical_json(element).encode())
                each(key, n, element)
            digest.update(b"]")
        else:
            digest.update(canonical_json(value).encode())
    digest.update(b"}")
    return "sha256:" + digest.hexdigest()


class Stored(Sequence):
    """A sealed suite's items (or variants), read from its file when they
    are needed (`jsonscan.Elements`): held are their ids and each one's byte
    span, not their texts. `by_id` reads one by id."""

    def __init__(self, elements: Sequence[dict], make: Callable[[dict, int], Any], ids: list[str]):
        self._elements = elements
        self._make = make
        self.ids = ids
        self._index = {i: n for n, i in enumerate(ids)}
        self.by_id = _ById(self)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, n):  # no slices: an element at a time
        if not -len(self) <= n < len(self):
            raise IndexError(n)
        n %= len(self)
        return self._element(self._elements[n], n)

    def __iter__(self) -> Iterator[Any]:
        return (self._element(d, n) for n, d in enumerate(self._elements))

    def _element(self, d: dict, n: int) -> Any:
        # Made with the id held here, not a new copy of it: what keeps an
        # element's id (a route, a judgment's key, the report's tables)
        # then holds no string of its own.
        if isinstance(d, dict) and d.get("id") == self.ids[n]:
            d["id"] = self.ids[n]
        return self._make(d, n)

    def position(self, key: str) -> int | None:
        return self._index.get(key)


class _ById(Mapping):
    """id -> element of a `Stored`, read when it is looked up."""

    def __init__(self, stored: Stored):
        self._stored = stored

    def __getitem__(self, key: str) -> Any:
        n = self._stored.position(key)
        if n is None:
            raise KeyError(key)
        return self._stored[n]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._stored.position(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._stored.ids)

    def __len__(self) -> int:
        return len(self._stored)


@attrs.frozen
class Sealed:
    """A sealed suite, read back: its items and variants are `Stored`, read
    from the file as they are used."""

    hash: str
    items: Sequence[Item]
    variants: Sequence[Variant]
    patches: dict[str, Patch]
    operators: dict[str, Perturbation]
    counts: dict[str, dict[str, int]]
    skipped: dict[str, str]
    judge: dict
    prompts: dict[str, str]  # generate/validate: the prompt versions the LLM variants were made with
    # Operators none of whose variants was accepted -> their commonest reasons (`rejections`).
    rejections: dict[str, list[dict]] = attrs.field(factory=dict)

    @property
    def items_by_id(self) -> Mapping[str, Item]:
        return self.items.by_id if isinstance(self.items, Stored) else {it.id: it for it in self.items}

    @property
    def variants_by_id(self) -> Mapping[str, Variant]:
        return self.variants.by_id if isinstance(self.variants, Stored) else {v.id: v for v in self.variants}


def seal(
    judge: dict,
    items: Sequence[dict],
    variants: list[Variant],
    patches: list[Patch],
    operators: list[Perturbation],
    counts: dict,
    skipped: dict,
    prompts: dict[str, str],
    suite: dict | None = None,
    rejections: dict[str, list[dict]] | None = None,
) -> dict:
    """The sealed document, with its hash, its items and variants made as
    they are read (`files.Lazy`: written by `files.write_json`, never held
    as dicts all at once); `suite` is `suite_settings` of
    the suite it was made for and `rejections` why operators made no
    variant (`rejections`), neither hashed: they say how the suite was
    made, not what it holds."""
    doc = {
        "schema": SCHEMA,
        "judge": judge,
        "prompts": dict(sorted(prompts.items())),
        "items": items,
        "variants": Lazy(sorted(variants, key=lambda v: v.id), Variant.to_json),
        "patches": [p.to_json() for p in sorted(patches, key=lambda p: p.id)],
        "operators": {op.name: op.to_json() for op in sorted(operators, key=lambda o: o.name)},
        "counts": {name: {k: int(c.get(k, 0)) for k in sorted(c)} for name, c in sorted(counts.items())},
        "skipped": dict(sorted(skipped.items())),
    }
    if suite is not None:
        doc["suite"] = suite
    if rejections:
        doc["rejections"] = rejections
    doc["hash"] = content_hash(doc)
    return doc


# Reasons kept per operator: an LLM validator's reasons are all distinct.
_REASONS = 3


def rejections(log: list[dict], counts: dict) -> dict[str, list[dict]]:
    """Per operator none of whose variants was accepted (and that tried
    one), its commonest reasons from the generation log (`validation.jsonl`'s
    entries): `[{"verdict", "reason", "count"}]`, most frequent first, so
    that the report says why the operator measured nothing."""
    empty = {op for op, c in counts.items() if not c.get("accepted") and any(c.values())}
    tally: dict[str, collections.Counter] = {op: collections.Counter() for op in sorted(empty)}
    for e in log:
        if e["operator"] in tally and e["verdict"] != "accept":
            tally[e["operator"]][(e["verdict"], str(e.get("reason") or ""))] += 1
    return {
        op: [
            {"verdict": verdict, "reason": reason, "count": n}
            for (verdict, reason), n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:_REASONS]
        ]
        for op, c in tally.items()
    }


def set_aside(folder: str, sealed_hash: str, paths: list[str]) -> str:
    """Move the files of `paths` that exist into a new subfolder of
    `folder` named after the sealed hash they belong to (`superseded-HASH`,
    numbered when that is taken), nothing overwritten; returns its path."""
    base = os.path.join(folder, f"superseded-{sealed_hash.removeprefix('sha256:')[:12]}")
    aside, n = base, 1
    while os.path.lexists(aside):
        n += 1
        aside = f"{base}-{n}"
    os.mkdir(aside)
    for path in paths:
        if os.path.lexists(path):
            os.replace(path, os.path.join(aside, os.path.basename(path)))
    fsync_folder(aside)
    fsync_folder(folder)
    return aside


def _model(m: ModelConfig) -> dict:
    """What of a model's settings makes its variants: not its key, timeout or
    retries, nor a URL's credentials or query (which may hold a token)."""
    return {
        "base_url": shown_url(m.base_url) if m.base_url else None,
        "model": m.model,
        "model_file": m.model_file,
        "temperature": m.temperature,
        "seed": m.seed,
        "max_tokens": m.max_tokens,
    }


def suite_settings(suite: Suite) -> dict:
    """The suite's settings that decide what a sealed suite holds and how
    its items are judged, beyond its items and operator definitions (which
    the sealed document holds themselves): recorded in it when it is sealed.
    The value tables feed `human.annotation` and `recorded.value` judgments
    by item id, outside the items, so their content counts too."""
    return {
        "limit": suite.limit,
        "seed": suite.seed,
        "repeats": suite.repeats,
        "generator": _model(suite.generator),
        "validator": _model(suite.validator),
        "annotations": _file_hash(suite.annotations),
        "recorded": _file_hash(suite.recorded),
    }


def _file_hash(path: str | None) -> str | None:
    """The SHA-256 of a file's bytes (None for no file); the suite's loading has read it already."""
    if path is None:
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def changed_items(sealed: Sealed, items: list[Item], items_path: str) -> list[str]:
    """The items of the suite's file that the sealed suite holds under the
    same id with other content (input, responses, reference, ...; not gold),
    each as `ITEMS:line (`id`)`, in file order: the sealed variants and
    their judgments are of the items as they were sealed."""
    by_id = sealed.items_by_id
    return [
        f"{items_path}:{it.line} (`{it.id}`)"
        for it in items
        if it.id in by_id and item_hash(it) != item_hash(by_id[it.id])
    ]


def listed(entries: list[str]) -> str:
    """The first few of `entries`, and how many more."""
    more = f" and {len(entries) - STALE_SHOWN} more" if len(entries) > STALE_SHOWN else ""
    return ", ".join(entries[:STALE_SHOWN]) + more


def suite_changes(sealed: Sealed, doc: dict, suite: Suite, items: list[Item]) -> list[str]:
    """What the suite asks now that the sealed suite `sealed` (document
    `doc`) was not made with, one phrase each: other items, other content
    under the same ids, operators added, dropped or redefined, and other
    settings (`suite_settings`, when the document recorded them). Empty when
    resuming it is sound."""
    out = []
    now_ids, then_ids = [it.id for it in items], set(sealed.items_by_id)
    added, dropped = [i for i in now_ids if i not in then_ids], then_ids - set(now_ids)
    if added or dropped:
        out.append(
            f"the items: {len(then_ids)} sealed, {len(now_ids)} now ({len(added)} not sealed, {len(dropped)} sealed "
            "but no longer in the suite's items)"
        )
    changed = changed_items(sealed, items, suite.items)
    if changed:
        out.append(f"the content of {len(changed)} item(s): {listed(changed)}")
    wanted, had = list(suite.requested()), set(sealed.operators) | set(sealed.skipped)
    if new := [n for n in wanted if n not in had]:
        out.append("operators added: " + ", ".join(new))
    if gone := sorted(had - set(wanted)):
        out.append("operators removed: " + ", ".join(gone))
    redefined = [
        n for n in wanted if n in sealed.operators and suite.perturbation(n).to_json() != sealed.operators[n].to_json()
    ]
    if redefined:
        out.append("operators defined differently (options or [[custom]] table): " + ", ".join(redefined))
    then = doc.get("suite")
    if isinstance(then, dict):
        now = suite_settings(suite)
        # Only what the document recorded: a setting recorded by a later version is not a change.
        out += [_change(k, then[k], now[k]) for k in now if k in then and then[k] != now[k]]
    return out


def _change(key: str, then, now) -> str:
    if key in ("annotations", "recorded"):
        return f"the `{key}` table ({'its content' if then and now else f'{_shown(then)} -> {_shown(now)}'})"
    return f"`{key}` {_shown(then)} -> {_shown(now)}"


def _shown(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_shown(v)}" for k, v in value.items() if v is not None) + "}"
    return "unset" if value is None else json.dumps(value)


def read_sealed(path: str, shape: ItemShape | None = None) -> tuple[Sealed, dict]:
    """A sealed suite and its raw document, its items read for the judge's
    declared item shape (`shape`); raises SealedError. The file is read a
    value at a time (`jsonscan`): the document's items and variants are
    `jsonscan.Elements`, read again from the file when they are used."""
    try:
        head, spans = jsonscan.scan(path, ("items", "variants"))
    except OSError as exc:
        raise SealedError(f"cannot read `{path}`: {exc.strerror}") from None
    except (jsonscan.ScanError, UnicodeDecodeError) as exc:
        raise SealedError(f"`{path}` is not JSON: {exc}") from None
    if head.get("schema") not in (SCHEMA, _SCHEMA_1):
        raise SealedError(f"`{path}` is not a sealed audit suite ({SCHEMA})")
    for key in ("items", "variants"):
        if key in head:
            raise SealedError(f"`{path}` is a malformed sealed suite (its `{key}` is not a list)")
    doc = {**head, **{key: jsonscan.Elements(path, found) for key, found in spans.items()}}
    item_ids: list[str] = []
    variant_ids: list[str] = []

    def item(d: dict, n: int) -> Item:
        return _item(d, doc["schema"], f"{path}: items[{n}]", shape)

    def made(key: str, n: int, d: Any) -> None:
        # Each made once here, to be checked, and again whenever it is used.
        if key == "items":
            item_ids.append(item(d, n).id)
        elif key == "variants":
            variant_ids.append(Variant.from_json(d).id)

    try:
        # One pass over the file makes the items and variants as it hashes them.
        if content_hash(doc, made) != doc["hash"]:
            raise SealedError(
                f"`{path}` was changed after it was sealed: its content does not match its hash {doc['hash'][:19]}..."
            )
        sealed = Sealed(
            hash=doc["hash"],
            items=Stored(doc["items"], item, item_ids),
            variants=Stored(doc["variants"], lambda d, n: Variant.from_json(d), variant_ids),
            patches={d["id"]: Patch.from_json(d) for d in doc["patches"]},
            operators={name: Perturbation.from_json(d) for name, d in doc["operators"].items()},
            counts=doc.get("counts", {}),
            skipped=doc.get("skipped", {}),
            judge=doc.get("judge", {}),
            prompts=doc.get("prompts", _FIRST_PROMPTS),
            rejections=doc.get("rejections", {}),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SealedError(f"`{path}` is a malformed sealed suite ({type(exc).__name__}: {exc})") from None
    except ItemError as exc:
        raise SealedError(f"`{path}` is a malformed sealed suite ({exc})") from None
    except OSError as exc:
        raise SealedError(f"cannot read `{path}`: {exc.strerror}") from None
    return sealed, doc


def _item(d: dict, schema: str, where: str, shape: ItemShape | None) -> Item:
    """A sealed item; one of schema /1 (the Item's attributes, candidates as
    `[id, text]` pairs, per-candidate values) is first put in the items-file
    form, so that one reader reads both."""
    if schema == _SCHEMA_1:
        pairs = d["candidates"]
        pointwise = [cid for cid, _ in pairs] == [POINTWISE_CANDIDATE]
        d = {
            **{k: d[k] for k in ("id", "input", "reference", "rubric", "gold") if d.get(k) is not None},
            **({"response": pairs[0][1]} if pointwise else {"responses": pairs}),
            **{
                k: (d[k].get(POINTWISE_CANDIDATE, {}) if pointwise else d[k])
                for k in ("annotations", "recorded")
                if d.get(k)
            },
        }
    return item_from_json(d, where, shape=shape)
