"""Evaluation against gold labels: metrics with bootstrap intervals, baselines."""
