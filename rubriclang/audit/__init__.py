"""The judge audit (`rbg audit`): perturb, validate, seal, re-judge, report.

See docs/audit.md; `pipeline.Audit` runs one audit end to end.
"""
