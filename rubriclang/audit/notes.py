"""Review notes typed on items of an audit: `DIR/notes.json`, the only file
the viewer (`rbg view`) writes, shown in the audit's own report. Each save
replaces the whole file atomically (`safeio.write_atomic`), so a crash
leaves the old notes or the new ones."""

from __future__ import annotations

import json
import os

from rubriclang.canonical import canonical_json
from rubriclang.safeio import open_regular, write_atomic

# Named for the viewer, which wrote the first notes files; kept so they still read.
SCHEMA = "rubriclang.view.notes/1"
FILE = "notes.json"
MAX_NOTE = 20_000


class NotesError(Exception):
    """A notes file that exists but is not one."""


def notes_path(folder: str) -> str:
    return os.path.join(folder, FILE)


def read_notes(folder: str) -> dict[str, str]:
    """item -> note; none when the file does not exist yet."""
    path = notes_path(folder)
    try:
        with open_regular(path, "r", encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotesError(f"`{path}` cannot be read as JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("notes"), dict):
        raise NotesError(f"`{path}` is not a notes file (schema `{SCHEMA}`); move it away to start new notes")
    return {str(k): str(v) for k, v in data["notes"].items()}


def save_note(folder: str, item: str, text: str) -> dict[str, str]:
    """Set (or, with empty text, remove) the note on `item`; the notes after."""
    notes = read_notes(folder)
    text = text.replace("\r\n", "\n").strip()[:MAX_NOTE]
    if text:
        notes[item] = text
    else:
        notes.pop(item, None)
    doc = canonical_json({"schema": SCHEMA, "notes": dict(sorted(notes.items()))}) + "\n"
    write_atomic(notes_path(folder), doc, within=folder)  # a link planted in the folder is replaced, not followed
    return notes
