"""The audit's JSON files are written as they are encoded (`audit.files.
json_chunks`), a table made entry by entry (a Mapping that is not a dict,
the report's `by_item`) included: the bytes are `json.dumps`'s, whatever
the values and the indent."""

from __future__ import annotations

import json
from collections.abc import Mapping

from hypothesis import given
from hypothesis import strategies as st

from rubriclang.audit.files import json_chunks, write_json


class Lazy(Mapping):
    """A table whose entries are made when read, counting the reads."""

    def __init__(self, entries: dict):
        self.entries, self.reads = entries, 0

    def __getitem__(self, key):
        self.reads += 1
        return self.entries[key]

    def __iter__(self):
        return iter(self.entries)

    def __len__(self):
        return len(self.entries)


leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3))
docs = st.dictionaries(st.text(), values | st.dictionaries(st.text(), values, max_size=4), max_size=5)


@given(docs, st.sampled_from([None, 1, 2]), st.data())
def test_a_table_made_entry_by_entry_is_written_as_json_dumps_writes_the_dict(doc, indent, data):
    lazy = {k: Lazy(v) if isinstance(v, dict) and data.draw(st.booleans()) else v for k, v in doc.items()}
    want = json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=indent, allow_nan=False)
    assert "".join(json_chunks(lazy, indent)) == want


def test_each_entry_is_read_once_as_it_is_written(tmp_path):
    table = Lazy({f"item{i}": {"baseline": {"value": i}, "variants": {}} for i in range(50)})
    write_json(str(tmp_path / "r.json"), {"by_item": table, "schema": "x"}, indent=2)
    assert table.reads == 50
    assert json.loads((tmp_path / "r.json").read_text())["by_item"] == table.entries
