"""Tests of rbg diff and rbg graph (rubriclang.review)."""
