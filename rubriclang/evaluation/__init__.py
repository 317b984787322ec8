"""Evaluation against gold labels (docs/evaluation.md): `gold` reads gold
against the judge's type, `evaluate` scores columns of decisions on the same
items, `metrics` holds the formulas and intervals, `baseline` the flat
baselines."""
