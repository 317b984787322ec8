"""Execution: items, criterion backends, composition, readouts, traces and replay."""
