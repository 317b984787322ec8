"""Build examples/begin/items.jsonl from BEGIN's Wizard-of-Wikipedia dev set.

    .venv/bin/python scripts/build_begin.py [--data ../shared/data/begin_wow] [--out examples/begin]

Every row of `begin_dev_wow.tsv` (430) becomes one pointwise item, by
`rbg items convert` alone: the knowledge snippet as the one grounding
document (`documents`), the previous turn as a one-turn conversation
(`input`), the model's response (`response`), the human attribution label as
gold (`attributable`, `not_attributable`, `generic`), and `model_name`,
`data_source` passed through. The rows have no ids: items are numbered in
file order. LICENSE, LICENSE-top and NOTICE are copied beside it.
Deterministic: the same data gives byte-identical files.
"""

from __future__ import annotations

from pathlib import Path

from example_slices import convert, copy_licences, main

LABELS = "Fully attributable=attributable,Not fully attributable=not_attributable,Generic=generic"


def build(data: Path, out: Path, scratch: Path) -> str:
    convert(
        data / "begin_dev_wow.tsv",
        out / "items.jsonl",
        *("--field", "documents=knowledge", "--documents", "documents"),
        *("--field", "input=message", "--conversation", "input"),
        *("--gold", "begin_label", "--label", LABELS, "--keep-unmapped"),
    )
    copy_licences(data, out, ("LICENSE", "LICENSE-top", "NOTICE"))
    return f"begin: {out / 'items.jsonl'}"


if __name__ == "__main__":
    main(__doc__, "begin_wow", "begin", build)
