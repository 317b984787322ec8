"""Build examples/faithdial/items.jsonl from the FaithDial data audit
(Wizard of Wikipedia part).

    .venv/bin/python scripts/build_faithdial.py [--data ../shared/data/faithdial_audit] [--out examples/faithdial]

The first 60 rows of each WoW file (the benchmark's own responses in
gold/wow.csv, and GPT2's, DoHA's and CTRL's) become 240 pointwise items:
the knowledge (`evidence` in gold/) as the one grounding document, the
previous turn as a one-turn conversation (`input`; none when empty), the
response, and gold on BEGIN's three attribution classes, read off the
expert labels (lower-cased, split at commas, two typos corrected):

- `not_attributable`: any `hallucination` or `partial hallucination`;
- `attributable`: otherwise `entailment`;
- `generic`: otherwise `generic`;
- no gold: `uncooperative` alone (it says how the response treats the
  conversation, not whether the knowledge supports it); counted.

`begin_labels` (the label tokens) and `vrm` (the speech acts, as written)
are passed through; `source` names the file. Plain code reads the four CSV
files; `rbg items convert` makes the documents and conversations. LICENSE
is copied beside it. Deterministic: the same data gives byte-identical files.
"""

from __future__ import annotations

import csv
from pathlib import Path

from example_slices import convert, copy_licences, main, write_jsonl

ROWS = 60
# (source name, file, response column, label column, knowledge column)
FILES = (
    ("gold", "gold/wow.csv", "response", "BEGIN", "evidence"),
    ("gpt2", "GPT2/gpt2_processed_wow.csv", "gpt2", "begin_label", "knowledge"),
    ("doha", "DoHA/doha_processed_wow.csv", "doha", "begin_label", "knowledge"),
    ("ctrl", "CTRL/ctrl_processed_wow.csv", "ctrl", "begin_label", "knowledge"),
)
TOKENS = {"hallucination", "partial hallucination", "entailment", "generic", "uncooperative"}
TYPOS = {"entailmentt": "entailment", "hallucinated": "hallucination"}


def labels(text: str, where: str) -> list[str]:
    """The label tokens of one cell, normalised; an unknown one stops the build."""
    out = []
    for raw in text.split(","):
        token = TYPOS.get(raw.strip().lower(), raw.strip().lower())
        if token not in TOKENS:
            raise SystemExit(f"{where}: unknown BEGIN label `{raw}` (known: {', '.join(sorted(TOKENS))})")
        out.append(token)
    return out


def gold(tokens: list[str]) -> str | None:
    if {"hallucination", "partial hallucination"} & set(tokens):
        return "not_attributable"
    for token, value in (("entailment", "attributable"), ("generic", "generic")):
        if token in tokens:
            return value
    return None  # uncooperative alone


def build(data: Path, out: Path, scratch: Path) -> str:
    records = []
    for source, name, response, label, knowledge in FILES:
        with open(data / name, encoding="utf-8", newline="") as fh:
            for n, row in enumerate(csv.DictReader(fh)):
                if n == ROWS:
                    break
                tokens = labels(row[label], f"{name} row {n + 2}")
                records.append(
                    {
                        "id": f"{source}-wow-{n:03d}",
                        "source": source,
                        "knowledge": row[knowledge],
                        "history": row["history"],
                        "response": row[response],
                        "gold": gold(tokens),
                        "begin_labels": tokens,
                        "vrm": row["VRM" if "VRM" in row else "vrm_label"],
                    }
                )
    convert(
        write_jsonl(scratch / "faithdial.jsonl", records),
        out / "items.jsonl",
        *("--field", "documents=knowledge", "--documents", "documents"),
        *("--field", "input=history", "--conversation", "input", "--keep-unmapped"),
    )
    copy_licences(data, out, ("LICENSE",))
    return f"faithdial: {len(records)} items from {len(FILES)} files"


if __name__ == "__main__":
    main(__doc__, "faithdial_audit", "faithdial", build)
