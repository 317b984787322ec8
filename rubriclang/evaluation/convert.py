"""`rbg items convert`: a public data set's records -> items, gold labels read by
`evaluation.gold` (docs/items.md).

A mapping names, for each item field, where its value is in a record (a
path such as `info.task.actions[0].name`, a template joining several paths,
or a list of paths joined by a separator), which fields hold gold labels,
how label codes map onto gold values, and how several annotators' labels
combine. A long-format table (one row per item and key) may be pivoted into
the items' `recorded` or `annotations` values. Everything a record lacks,
every code the label map does not name, and every tie the policy does not
settle is an error at the record's `path:line`; every source field no
mapping reads is counted in the summary or passed through: nothing is
guessed or dropped without being said.
"""

from __future__ import annotations

import collections
import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from rubriclang.catalog.types import fmt_num
from rubriclang.evaluation.gold import GoldValueError, LabelMap
from rubriclang.interp.items import ItemError
from rubriclang.items.shape import RESERVED, FieldSpec
from rubriclang.items.validate import ShapeError, check_value

# Item fields a mapping may fill, besides `responses.CID`, `annotations.KEY`
# and `recorded.KEY` (pairwise: `annotations.CID.KEY`) and declared fields.
TEXT_FIELDS = ("id", "input", "response", "reference", "rubric")
# Of these, the ones a structured value (a conversation, JSON) may fill as it is.
STRUCTURED_OK = ("input", "response")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SEGMENT = re.compile(r"\[(\*|\d+)\]|([^.\[\]]+)")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_CONVERSATION = FieldSpec("conversation", "conversation")
_DOCUMENTS = FieldSpec("documents", "documents")
# ShareGPT-style chat logs (`{"from": "human", "value": ...}`) name their roles so.
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system"}


class Source:
    """Where one item field's value is in a record."""

    def paths(self) -> tuple[str, ...]:
        """Every source path it reads (for the unmapped-field count)."""
        raise NotImplementedError

    def get(self, record: dict[str, Any], target: str, where: str) -> Any:
        """The value; ItemError at `where` when the record lacks it."""
        raise NotImplementedError


@attrs.frozen
class Path(Source):
    """A field name as written, else a path: `a.b`, `a[0].c`, `turns.0`;
    `[*]` takes every element of a list, and a second `[*]` flattens
    (`question[*][*]`: every message of every turn, in order)."""

    text: str

    def paths(self) -> tuple[str, ...]:
        return (self.text,)

    def get(self, record: dict[str, Any], target: str, where: str) -> Any:
        found, value = lookup(record, self.text, where)
        if not found:
            raise ItemError(
                where, f"the record has no `{self.text}` (for `{target}`)", f"its fields: {_fields_text(record)}"
            )
        return value


@attrs.frozen
class Template(Source):
    """Text with `{PATH}` placeholders (`{{` and `}}` are braces)."""

    parts: tuple[tuple[str, Path | None], ...]  # (literal, then the path shown after it)

    def paths(self) -> tuple[str, ...]:
        return tuple(p.text for _, p in self.parts if p is not None)

    def get(self, record: dict[str, Any], target: str, where: str) -> Any:
        out = []
        for literal, path in self.parts:
            out.append(literal)
            if path is not None:
                out.append(_text(path.get(record, target, where), f"{target} ({{{path.text}}})", where) or "")
        return "".join(out)


@attrs.frozen
class Join(Source):
    """Several paths' texts joined by a separator, empty ones left out."""

    parts: tuple[Path, ...]
    sep: str

    def paths(self) -> tuple[str, ...]:
        return tuple(p.text for p in self.parts)

    def get(self, record: dict[str, Any], target: str, where: str) -> Any:
        texts = [_text(p.get(record, target, where), f"{target} ({p.text})", where) for p in self.parts]
        return self.sep.join(t for t in texts if t)


@attrs.frozen
class Pivot:
    """A long-format table (one row per item and key) read into the items'
    `recorded` or `annotations` values."""

    table: str  # `recorded` or `annotations`
    path: str  # the table's file
    item: str = "item"  # source path of the item id
    key: str = "key"  # source path of the value's key
    value: str = "value"  # source path of the value
    # A distribution instead of one value: point -> source path.
    points: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class Mapping:
    """How records become items."""

    fields: dict[str, Source]  # item field (e.g. `responses.a`) -> where its value is
    gold: tuple[str, ...] = ()  # source paths of the gold label(s)
    labels: LabelMap | None = None  # data-set code -> gold value; None: values as they are
    combine: str = "majority"
    on_tie: str = "error"
    conversations: tuple[str, ...] = ()  # item fields read as conversations
    documents: tuple[str, ...] = ()  # item fields read as documents
    keep_unmapped: bool = False
    ignore: tuple[str, ...] = ()  # source fields left out on purpose

    @property
    def candidates(self) -> tuple[str, ...]:
        return tuple(k.split(".", 1)[1] for k in self.fields if k.startswith("responses."))


@attrs.frozen
class Counts:
    """What a conversion did, for its summary line."""

    items: int = 0
    with_gold: int = 0
    no_gold: int = 0  # every annotator's value was missing or empty
    ties_dropped: int = 0
    ties_kept: int = 0
    annotators: int = 1  # gold fields read per record

    def text(self) -> str:
        parts = [f"{self.items} item{'' if self.items == 1 else 's'}", f"{self.with_gold} with gold"]
        if self.no_gold:
            why = "no annotator gave a label" if self.annotators > 1 else "the gold value is null or empty"
            parts.append(f"{self.no_gold} without ({why})")
        if self.ties_dropped:
            parts.append(f"{self.ties_dropped} without (annotators tied; --on-tie drop)")
        if self.ties_kept:
            parts.append(f"{self.ties_kept} annotator ties written as `tie`")
        return ", ".join(parts)


def parse_target(target: str) -> str:
    """An item field `--field` may fill; raises ValueError with the reason."""
    head = target.split(".", 1)[0]
    if target in TEXT_FIELDS:
        return target
    if head == "responses" and target.count(".") == 1 and target.split(".")[1]:
        return target
    if head in ("annotations", "recorded") and 1 <= target.count(".") <= 2 and all(target.split(".")[1:]):
        return target
    if _NAME.fullmatch(target) and target not in RESERVED:
        return target  # a field the judging rubric declares (`item { NAME: TYPE }`)
    raise ValueError(
        f"`{target}` is not an item field: use one of {', '.join(TEXT_FIELDS)}, responses.CANDIDATE, "
        "annotations.KEY, recorded.KEY (pairwise: annotations.CANDIDATE.KEY), or a declared field's name "
        f"(a letter or `_`, then letters, digits, `_`; not {', '.join(r for r in RESERVED if r != 'id')})"
    )


def parse_field(spec: str) -> tuple[str, Source]:
    """`TARGET=SOURCE` of `--field`: SOURCE a path, or a template when it
    holds `{`; raises ValueError with the reason."""
    target, sep, source = spec.partition("=")
    target, source = target.strip(), source.strip()
    if not sep or not target or not source:
        raise ValueError(f"`{spec}` is not TARGET=SOURCE (e.g. input=instruction)")
    return parse_target(target), (parse_template(source) if "{" in source or "}" in source else Path(source))


def parse_join(spec: str, sep: str) -> tuple[str, Source]:
    """`TARGET=PATH,PATH,...` of `--join`; raises ValueError with the reason."""
    target, eq, source = spec.partition("=")
    paths = [p.strip() for p in source.split(",")]
    if not eq or not target.strip() or len(paths) < 2 or not all(paths):
        raise ValueError(f"`{spec}` is not TARGET=PATH,PATH,... (e.g. input=instruction,input)")
    return parse_target(target.strip()), Join(tuple(Path(p) for p in paths), sep)


def parse_template(text: str) -> Template:
    """`{PATH}` placeholders in literal text; raises ValueError with the reason."""
    parts: list[tuple[str, Path | None]] = []
    literal, pos = [], 0
    for m in _PLACEHOLDER.finditer(text):
        literal.append(text[pos : m.start()])
        pos = m.end()
        if m.group(0) in ("{{", "}}"):
            literal.append(m.group(0)[0])
            continue
        if not m.group(1).strip():
            raise ValueError(f"`{text}`: an empty placeholder `{{}}` (write `{{{{` for a brace)")
        parts.append(("".join(literal), Path(m.group(1).strip())))
        literal = []
    rest = text[pos:]
    if "{" in rest or "}" in rest:
        raise ValueError(f"`{text}`: an unmatched brace (write `{{{{` or `}}}}` for a literal one)")
    parts.append(("".join(literal) + rest, None))
    if all(p is None for _, p in parts):
        raise ValueError(f"`{text}` has braces but no `{{PATH}}` placeholder")
    return Template(tuple(parts))


def parse_points(spec: str) -> tuple[tuple[str, str], ...]:
    """`POINT=PATH,...` of `--pivot-value` for a distribution; ValueError with the reason."""
    out = []
    for part in spec.split(","):
        point, eq, path = part.partition("=")
        if not eq or not point.strip() or not path.strip():
            raise ValueError(f"`{part}` is not POINT=PATH (e.g. 1=answer1_prob)")
        out.append((point.strip(), path.strip()))
    if len({p for p, _ in out}) != len(out):
        raise ValueError(f"`{spec}` names a point twice")
    return tuple(out)


def _as_text(value: Any) -> str:
    """A scalar as text: numbers as the language spells them (`1.0` -> `1`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return fmt_num(value) if isinstance(value, (int, float)) else str(value)


def _segments(path: str) -> list[str | int | None]:
    """`a.b[0][*]` -> ["a", "b", 0, None] (None: every element)."""
    out: list[str | int | None] = []
    for part in path.split("."):
        pos = 0
        for m in _SEGMENT.finditer(part):
            if m.start() != pos:
                return []
            pos = m.end()
            if m.group(2) is not None:
                out.append(m.group(2))
            else:
                out.append(None if m.group(1) == "*" else int(m.group(1)))
        if pos != len(part) or not part:
            return []
    return out


def lookup(record: dict[str, Any], path: str, where: str = "") -> tuple[bool, Any]:
    """(found, value) of `path` in a record: the field of that exact name, else
    a path into nested objects and lists (`scores.overall`, `turns.0`,
    `turns[0].text`); with `[*]` the list of every element reached."""
    if path in record:
        return True, record[path]
    segments = _segments(path)
    if not segments:
        return False, None
    values: list[Any] = [record]
    star = False
    for seg in segments:
        nxt: list[Any] = []
        for value in values:
            if seg is None:
                if not isinstance(value, list):
                    raise ItemError(where, f"`{path}`: `[*]` stands on {_kind(value)}, not a list")
                nxt.extend(value)
            elif isinstance(value, dict) and isinstance(seg, str) and seg in value:
                nxt.append(value[seg])
            elif isinstance(value, list) and isinstance(seg, (int, str)) and str(seg).isdigit():
                if int(seg) >= len(value):
                    return False, None
                nxt.append(value[int(seg)])
            else:
                return False, None
        star = star or seg is None
        values = nxt
    return True, (values if star else values[0])


def _kind(value: Any) -> str:
    if isinstance(value, (dict, list, str)):
        return "an object" if isinstance(value, dict) else "a list" if isinstance(value, list) else "a string"
    return f"`{json.dumps(value)}`"


def _cell(value: Any) -> Any:
    """A label or value as data: a numeric string (as CSV cells are) is a number."""
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        v = float(value)
        return int(v) if re.fullmatch(r"[+-]?\d+", value.strip()) else v
    return value


def _missing(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, str) and not value.strip())
        or (isinstance(value, float) and math.isnan(value))
    )


def _fields_text(record: dict[str, Any]) -> str:
    names = list(record)
    return ", ".join(f"`{n}`" for n in names[:12]) + (" ..." if len(names) > 12 else "")


def _text(value: Any, target: str, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise ItemError(
            where, f"`{target}` must be text, the source holds {'an object' if isinstance(value, dict) else 'a list'}"
        )
    return value if isinstance(value, str) else _as_text(value)


def conversation(value: Any, target: str, where: str) -> tuple[list[Any], int]:
    """A chat log as an OpenAI chat-completions conversation, and how many
    tool call ids were renamed: a text is one user turn (an empty one, no
    turn), messages are kept as they are, ShareGPT's
    `{"from", "value"}` read as `{"role", "content"}`, and a call id that an
    earlier call already used (the API pairs a result with the call just
    before it, so logs such as tau-bench's reuse ids) renamed `ID~2`, `ID~3`,
    ... in the call and in the results that answer it, so that each call,
    and each per-call judgment, has its own id. Then validated as the item
    reader will (ItemError at `where` naming the message's path)."""
    renamed = 0
    if isinstance(value, str):  # one turn of the user's (an empty one: no turn)
        value = [{"role": "user", "content": value}] if value.strip() else []
    if isinstance(value, list):
        value = [_message(m, f"{target}[{i}]", where) for i, m in enumerate(value)]
        value, renamed = _unique_calls(value)
    try:
        check_value(_CONVERSATION, value, target)
    except ShapeError as exc:
        raise ItemError(where, str(exc), exc.hint) from None
    return value, renamed


_ALL_READ = object()
_WHOLE = True  # a read-tree node: the whole value is read


def _read_tree(paths: Iterable[str]) -> dict[str, Any]:
    """The object keys the paths read, nested: `{"a": {"b": True}}` for
    `a.b`; a path is read whole from its first list index or `[*]` on."""
    tree: dict[str, Any] = {}
    for path in paths:
        names: list[str] = []  # the object keys before the first list index
        for seg in _segments(path):
            if not isinstance(seg, str):
                break
            names.append(seg)
        node = tree
        for i, name in enumerate(names):
            if node.get(name) is _WHOLE:
                break
            if i == len(names) - 1:
                node[name] = _WHOLE
                break
            node = node.setdefault(name, {})
    return tree


def _unread(value: Any, node: Any, path: str, counts: collections.Counter[str], count: bool) -> Any:
    """What of `value` no path reads (`node`: its read tree): `_ALL_READ`,
    or the value with the read parts taken out; each unread part holding a
    value is counted under its path when `count`."""
    if node is _WHOLE:
        return _ALL_READ
    if node is None or not isinstance(value, dict):
        if node is None and count and not _missing(value) and value not in ([], {}):
            counts[path] += 1
        return value if node is None else _ALL_READ
    left = {}
    for key, sub in value.items():
        rest = _unread(sub, node.get(key), f"{path}.{key}", counts, count)
        if rest is not _ALL_READ:
            left[key] = rest
    return left or _ALL_READ


def documents(value: Any, target: str, where: str) -> Any:
    """Grounding passages as documents: a text is one document (id `1`), a
    list of texts one each (ids `1`, `2`, ...), a list of `{"id", "title"?,
    "text"}` objects as it is; validated as the item reader will."""
    if isinstance(value, str):
        value = [{"id": "1", "text": value}]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = [{"id": str(i), "text": v} for i, v in enumerate(value, 1)]
    try:
        check_value(_DOCUMENTS, value, target)
    except ShapeError as exc:
        raise ItemError(where, str(exc), exc.hint) from None
    return value


def _unique_calls(messages: list[Any]) -> tuple[list[Any], int]:
    used: collections.Counter[str] = collections.Counter()
    current: dict[str, str] = {}  # a call id as written -> the id it now has
    out, renamed = [], 0
    for m in messages:
        if not isinstance(m, dict):
            out.append(m)
            continue
        calls = m.get("tool_calls")
        if isinstance(calls, list):
            new_calls = []
            for call in calls:
                cid = call.get("id") if isinstance(call, dict) else None
                if isinstance(cid, str):
                    used[cid] += 1
                    current[cid] = cid if used[cid] == 1 else f"{cid}~{used[cid]}"
                    if current[cid] != cid:
                        call = {**call, "id": current[cid]}
                        renamed += 1
                new_calls.append(call)
            m = {**m, "tool_calls": new_calls}
        answered = m.get("tool_call_id")
        if m.get("role") == "tool" and isinstance(answered, str) and current.get(answered, answered) != answered:
            m = {**m, "tool_call_id": current[answered]}
        out.append(m)
    return out, renamed


def _message(message: Any, at: str, where: str) -> Any:
    if not isinstance(message, dict) or "role" in message or "from" not in message:
        return message
    role = SHAREGPT_ROLES.get(str(message["from"]).lower())
    if role is None:
        raise ItemError(
            where,
            f"`{at}.from` is {json.dumps(message['from'], ensure_ascii=False)[:40]}, not a role",
            f"a chat log's speakers are: {', '.join(SHAREGPT_ROLES)}",
        )
    out = {"role": role, "content": message.get("value")}
    out.update((k, v) for k, v in message.items() if k not in ("from", "value"))
    return out


class Converter:
    """Turns records into item objects under one mapping."""

    def __init__(self, mapping: Mapping, source_fields: Iterable[str] = ()):
        self.mapping = mapping
        fields = dict(mapping.fields)
        # A source field named as an item field maps onto it unless mapped otherwise.
        taken = {p for s in fields.values() for p in s.paths()}
        for name in TEXT_FIELDS:
            if name not in fields and name in source_fields and name not in taken:
                fields[name] = Path(name)
        self.fields = fields
        self.cids = mapping.candidates
        self.counts = Counts(annotators=len(mapping.gold))
        # Source fields every mapping, gold path and --ignore accounts for.
        read = {p for s in fields.values() for p in s.paths()} | set(mapping.gold) | set(mapping.ignore)
        self._exact = read  # a path that is a field's exact name reads all of it
        self._tree = _read_tree(read)
        self.unmapped: collections.Counter[str] = collections.Counter()
        self.renamed_calls = 0  # reused tool call ids renamed (`conversation`)
        self.other_keys = 0  # records of a keyed object whose key is not their id
        self._seen: dict[str | None, str] = {}  # item id -> where it was first
        self._row = 0

    def items(self, records: Iterable[tuple[str, dict[str, Any], str | None]]) -> Iterator[dict[str, Any]]:
        for where, record, key in records:
            self._row += 1
            yield self.item(record, where, key)

    def notes(self) -> list[str]:
        """The summary's further lines: renamed call ids, unmapped fields."""
        out = []
        if self.renamed_calls:
            out.append(f"{self.renamed_calls} reused tool call ids renamed ID~2, ID~3, ... (with their results)")
        if self.other_keys:
            out.append(f"{self.other_keys} records' keys in the JSON object differ from their ids and are not kept")
        return [*out, self.unmapped_text()] if self.unmapped else out

    def unmapped_text(self) -> str:
        """The source fields no mapping read, with how many records held a
        value there (empty values lose nothing and are not counted)."""
        if not self.unmapped:
            return ""
        n = self.counts.items
        names = ", ".join(f"`{k}` ({c} of {n})" for k, c in sorted(self.unmapped.items(), key=lambda kv: kv[0]))
        return f"not in the items: {names}; keep them with --keep-unmapped, or name them with --ignore"

    def item(self, record: dict[str, Any], where: str, key: str | None = None) -> dict[str, Any]:
        m = self.mapping
        f = self.fields
        if self.cids and "response" in f:
            raise ItemError(
                where,
                "the mapping gives both `response` and `responses.*`",
                "an item is pointwise (response) or pairwise (responses.A, responses.B)",
            )
        if self.cids and len(self.cids) != 2:
            raise ItemError(
                where, f"a pairwise item needs exactly two `responses.*` fields, the mapping gives {len(self.cids)}"
            )
        if not self.cids and "response" not in f:
            raise ItemError(
                where,
                "the mapping gives no response",
                "add --field response=FIELD, or --field responses.a=F1 --field responses.b=F2 for pairs",
            )
        if "id" in f:
            item_id = _text(f["id"].get(record, "id", where), "id", where)
            if key is not None and key != item_id:
                self.other_keys += 1  # the object's key is not the item's id: say it is not kept
        else:
            item_id = key if key is not None else str(self._row)
        if item_id in self._seen:
            raise ItemError(
                where,
                f"duplicate item id `{item_id}` (first at {self._seen[item_id]})",
                "map `id` to a field that is unique, or leave it out to number the records",
            )
        self._seen[item_id] = where
        out: dict[str, Any] = {"id": item_id}
        out["input"] = self._value(record, "input", where) if "input" in f else ""
        if self.cids:
            out["responses"] = {cid: self._value(record, f"responses.{cid}", where) for cid in self.cids}
        else:
            out["response"] = self._value(record, "response", where)
        for name in ("reference", "rubric"):
            if name in f:
                value = _text(f[name].get(record, name, where), name, where)
                if value is not None:
                    out[name] = value
        for name in f:
            if name not in TEXT_FIELDS and "." not in name:
                out[name] = self._value(record, name, where)
        for table in ("annotations", "recorded"):
            values = self._table(record, table, where)
            if values:
                out[table] = values
        if m.gold:
            gold = self._gold(record, where)
            if gold is not None:
                out["gold"] = gold
        self._unmapped(record, out, where)
        self.counts = attrs.evolve(self.counts, items=self.counts.items + 1)
        return out

    def _value(self, record: dict[str, Any], target: str, where: str) -> Any:
        """A text or structured field: scalars as text for the built-in
        fields, structured values (a conversation, JSON) kept as they are."""
        value = self.fields[target].get(record, target, where)
        if target in self.mapping.conversations:
            value, renamed = conversation(value, target, where)
            self.renamed_calls += renamed
            return value
        if target in self.mapping.documents:
            return documents(value, target, where)
        name = target.split(".", 1)[0]
        if name in TEXT_FIELDS or name == "responses":
            if isinstance(value, (dict, list)) and name in (*STRUCTURED_OK, "responses"):
                return value
            return _text(value, target, where) or ""
        return value

    def _unmapped(self, record: dict[str, Any], out: dict[str, Any], where: str) -> None:
        for name, value in record.items():
            if name in self._exact:
                continue
            left = _unread(value, self._tree.get(name), name, self.unmapped, count=not self.mapping.keep_unmapped)
            if left is _ALL_READ or not self.mapping.keep_unmapped:
                continue
            if name in out or name in RESERVED:
                raise ItemError(
                    where,
                    f"--keep-unmapped: the source field `{name}` would overwrite the item's `{name}`",
                    f"map it to another field (--field OTHER={name}) or leave it out with --ignore {name}",
                )
            out[name] = left

    def _table(self, record: dict[str, Any], table: str, where: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for target, source in self.fields.items():
            parts = target.split(".")
            if parts[0] != table:
                continue
            value = _cell(source.get(record, target, where))
            if self.cids:
                if len(parts) != 3 or parts[1] not in self.cids:
                    raise ItemError(
                        where,
                        f"`{target}`: a pairwise item's {table} are `{table}.CANDIDATE.KEY`, CANDIDATE one of "
                        f"{', '.join(self.cids)}",
                    )
                out.setdefault(parts[1], {})[parts[2]] = value
            else:
                if len(parts) != 2:
                    raise ItemError(where, f"`{target}`: a pointwise item's {table} are `{table}.KEY`")
                out[parts[1]] = value
        return out

    def _gold(self, record: dict[str, Any], where: str) -> Any:
        m = self.mapping
        labels = []
        for path in m.gold:
            raw = Path(path).get(record, "gold", where)
            if _missing(raw):
                continue
            labels.append(self._label(raw, path, where))
        if not labels:
            self.counts = attrs.evolve(self.counts, no_gold=self.counts.no_gold + 1)
            return None
        value = labels[0] if len(labels) == 1 else self._combine(labels, where)
        if value is None:
            return None
        if self.cids and value not in (*self.cids, "tie"):
            raise ItemError(
                where,
                f"gold `{value}` is neither a candidate ({', '.join(self.cids)}) nor `tie`",
                f"map the data set's codes onto them, e.g. --label 1={self.cids[0]},2={self.cids[1]}",
            )
        self.counts = attrs.evolve(self.counts, with_gold=self.counts.with_gold + 1)
        return value

    def _label(self, raw: Any, path: str, where: str) -> Any:
        labels = self.mapping.labels
        if labels is None:
            if isinstance(raw, (dict, list)):
                raise ItemError(
                    where, f"gold `{path}` holds {'an object' if isinstance(raw, dict) else 'a list'}, not a label"
                )
            return _as_text(raw) if self.cids else _cell(raw)
        try:
            value = labels.lookup(raw)
        except GoldValueError as exc:
            raise ItemError(
                where, f"{exc.message} (in `{path}`)", "add the code to --label, or fix the gold value"
            ) from None
        return value if self.cids else _cell(value)

    def _combine(self, labels: list[Any], where: str) -> Any:
        m = self.mapping
        if m.combine == "mean":
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in labels):
                raise ItemError(
                    where,
                    f"--combine mean needs numeric labels, got {', '.join(map(json.dumps, labels))}",
                    "use --combine majority for labels",
                )
            return math.fsum(labels) / len(labels)
        counts = collections.Counter(json.dumps(v, sort_keys=True) for v in labels)
        ranked = counts.most_common()
        if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
            return json.loads(ranked[0][0])
        tied = sorted(k for k, n in ranked if n == ranked[0][1])
        if m.on_tie == "drop":
            self.counts = attrs.evolve(self.counts, ties_dropped=self.counts.ties_dropped + 1)
            return None
        if m.on_tie == "tie":
            if not self.cids:
                raise ItemError(
                    where,
                    "--on-tie tie writes the pairwise gold `tie`, and these items are pointwise",
                    "use --on-tie drop, or --combine mean",
                )
            self.counts = attrs.evolve(self.counts, ties_kept=self.counts.ties_kept + 1)
            return "tie"
        raise ItemError(
            where,
            f"the annotators are split with no majority ({', '.join(tied)} each {ranked[0][1]} of {len(labels)})",
            "choose what a split means: --on-tie drop (no gold), --on-tie tie (pairwise), or --combine mean (numbers)",
        )


def pivot(spec: Pivot, records: Iterable[tuple[str, dict[str, Any], str | None]], rows: list[dict[str, Any]]) -> str:
    """Put a long-format table's values into the items `rows` (in place),
    under `spec.table`: one row per (item, key), its value one cell or a
    distribution `{POINT: probability}` over several. A row for an item the
    rows lack, a second value for one key, or a malformed cell is an error at
    the row's line; returns the summary's clause."""
    by_id = {row["id"]: row for row in rows}
    first: dict[tuple[str, str], str] = {}
    n_rows, filled = 0, set()
    for where, record, _ in records:
        item_id = _text(Path(spec.item).get(record, "the item id", where), "the item id", where) or ""
        key = _text(Path(spec.key).get(record, "the key", where), "the key", where) or ""
        if not key:
            raise ItemError(where, f"the key `{spec.key}` is empty", "every row names the value's key")
        row = by_id.get(item_id)
        if row is None:
            raise ItemError(
                where,
                f"the row is for item `{item_id}`, which the items do not have",
                "pivot a table of the converted items' values only (filter it, or convert every item)",
            )
        if "responses" in row:
            raise ItemError(where, "--pivot fills pointwise items only; these items are pairwise")
        if (item_id, key) in first:
            raise ItemError(where, f"a second value for item `{item_id}`, key `{key}` (first at {first[item_id, key]})")
        if key in row.get(spec.table, {}):
            raise ItemError(where, f"item `{item_id}` has `{spec.table}.{key}` from --field already")
        first[item_id, key] = where
        if spec.points:
            value: Any = {p: _number(record, path, where) for p, path in spec.points}
        else:
            value = _cell(Path(spec.value).get(record, "the value", where))
        row.setdefault(spec.table, {})[key] = value
        n_rows += 1
        filled.add(item_id)
    return f"{n_rows} {spec.table} value{'' if n_rows == 1 else 's'} for {len(filled)} of {len(rows)} items"


def _number(record: dict[str, Any], path: str, where: str) -> float:
    value = _cell(Path(path).get(record, "a probability", where))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ItemError(
            where, f"`{path}` holds {json.dumps(value)[:40]}, not a probability", "a distribution's values are >= 0"
        )
    return float(value)
