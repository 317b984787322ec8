"""Declared item shapes: the field types a rubric's `item { ... }` declares
(`shape`), the validator every command's item reader applies (`validate`),
and the default rendering of structured fields into prompts (`render`)."""
