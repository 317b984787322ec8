"""The .rbg grammar, shipped as package data."""
