"""`rbg audit preview SUITE --out DIR`: the variants made and validated,
sealed, and shown for review before any judgment (`DIR/preview.json`,
`DIR/preview.html`). The run (`rbg audit SUITE --out DIR`) then reuses
them: they are the folder's sealed suite."""

from __future__ import annotations

import os

from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.seal import Sealed
from rubriclang.audit.variants import texts
from rubriclang.jsonl import read_jsonl

SCHEMA = "rubriclang.audit.preview/1"


def _damaged(where: str, message: str, hint: str = "") -> Exception:
    from rubriclang.audit.pipeline import AuditError  # the pipeline imports this module

    return AuditError(f"{where}: {message}", hint or "generate the suite again into a new --out")


def preview_doc(sealed: Sealed, judge: JudgeInfo, validation_path: str) -> dict:
    """Every accepted variant with what it changed (original and perturbed
    side by side), every validation decision (rejected and unavailable
    ones included), the counts and the skipped operators."""
    items = sealed.items_by_id
    variants = []
    for v in sealed.variants:
        if v.patch is not None:
            patch = sealed.patches[v.patch]
            original, perturbed = patch.texts(judge.graphs[patch.graph] if patch.graph is not None else judge.graph)
        else:
            original, perturbed = texts(items[v.item]), texts(v.apply(items[v.item]))
        variants.append(
            {
                "variant": v.id,
                "item": v.item,
                "operator": v.operator,
                "validation": v.validation.to_json(),
                "original": original,
                "perturbed": perturbed,
            }
        )
    # Written whole (atomically), so a line that does not read is damage: an error naming it.
    log = (
        [v for _, v in read_jsonl(validation_path, _damaged, what="validation record")]
        if os.path.exists(validation_path)
        else []
    )
    return {
        "schema": SCHEMA,
        "sealed": sealed.hash,
        "variants": variants,
        "validation": log,
        "counts": sealed.counts,
        "skipped": sealed.skipped,
    }


def render_preview(doc: dict) -> str:
    """The preview as one self-contained page (no script; everything escaped)."""
    from rubriclang.audit.html import structure
    from rubriclang.audit.html.markup import Markup, el
    from rubriclang.audit.html.page import CSP
    from rubriclang.audit.html.style import CSS
    from rubriclang.audit.html.textdiff import sides

    def pairs(original: dict, perturbed: dict):
        """(field, old value, new value) of each changed field: texts, or an item's structured values."""
        if "criteria" in original:
            for name in sorted(set(original["criteria"]) | set(perturbed["criteria"])):
                for param in sorted(set(original["criteria"].get(name, {})) | set(perturbed["criteria"].get(name, {}))):
                    a, b = (
                        str(original["criteria"].get(name, {}).get(param, "")),
                        str(perturbed["criteria"].get(name, {}).get(param, "")),
                    )
                    if a != b:
                        yield f"criterion.{name}.{param}", a, b
            return
        if original["input"] != perturbed["input"]:
            yield "input", original["input"] or "", perturbed["input"] or ""
        old = dict(map(tuple, original["candidates"]))
        for cid, text in perturbed["candidates"]:
            if old.get(cid) != text:
                yield f"candidate {cid}", old.get(cid, ""), text
        if [c for c, _ in original["candidates"]] != [c for c, _ in perturbed["candidates"]]:
            yield (
                "candidate order",
                " ".join(c for c, _ in original["candidates"]),
                " ".join(c for c, _ in perturbed["candidates"]),
            )
        old_fields, new_fields = original.get("fields") or {}, perturbed.get("fields") or {}
        for name in list(old_fields) + [n for n in new_fields if n not in old_fields]:
            if old_fields.get(name) != new_fields.get(name):
                yield name, old_fields.get(name), new_fields.get(name)

    blocks = []
    for v in doc["variants"]:
        rows = []
        for field, a, b in pairs(v["original"], v["perturbed"]):
            # A structured field (a conversation, documents, JSON) by its form, as the report shows it.
            left, right = (
                sides(a, b)
                if isinstance(a, str) and isinstance(b, str)
                else (structure.field(None, a, b), structure.field(None, b, a))
            )
            rows.append(
                el(
                    "tr",
                    None,
                    el("th", {"scope": "row"}, field),
                    el("td", {"class": "text"}, left),
                    el("td", {"class": "text"}, right),
                )
            )
        val = v["validation"]
        blocks.append(
            el(
                "section",
                {"class": "finding"},
                el("h3", None, el("code", None, v["variant"])),
                el(
                    "p",
                    {"class": "what"},
                    f"{v['operator']}; validated by {val.get('by')}: {val.get('verdict')}"
                    + (f" ({val['reason']})" if val.get("reason") else ""),
                ),
                el("table", None, el("tbody", None, rows or el("tr", None, el("td", None, "no text changed")))),
            )
        )
    head = ["Variant", "Operator", "By", "Verdict", "Reason"]
    log = el(
        "table",
        {"class": "operators"},
        el("thead", None, el("tr", None, [el("th", {"scope": "col"}, h) for h in head])),
        el(
            "tbody",
            None,
            [
                el(
                    "tr",
                    None,
                    [
                        el("td", None, str(r.get(k) if r.get(k) is not None else ""))
                        for k in ("variant", "operator", "by", "verdict", "reason")
                    ],
                )
                for r in doc["validation"]
            ],
        ),
    )
    skipped = el(
        "ul", None, [el("li", None, el("code", None, k), f": {why}") for k, why in sorted(doc["skipped"].items())]
    )
    main = el(
        "main",
        None,
        el(
            "p",
            None,
            "Sealed suite ",
            el("code", {"class": "hash"}, doc["sealed"]),
            f": {len(doc['variants'])} accepted variant(s). Nothing has been judged yet.",
        ),
        el(
            "section",
            {"id": "validation"},
            el("h2", None, "Validation decisions"),
            log
            if doc["validation"]
            else el("p", None, "No variant needed a validator (rule variants are checked by structure)."),
        ),
        el("section", {"id": "skipped"}, el("h2", None, "Skipped operators"), skipped) if doc["skipped"] else None,
        el("section", {"id": "variants"}, el("h2", None, "Accepted variants"), blocks or el("p", None, "None.")),
    )
    page_head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}),
        el("title", None, "Audit preview"),
        el("style", None, Markup(CSS)),
    )
    body = el("body", None, el("header", {"class": "top"}, el("div", None, el("h1", None, "Audit preview"))), main)
    return "<!DOCTYPE html>\n" + el("html", {"lang": "en"}, page_head, body) + "\n"
