"""Tests of the LLM criteria backend, against a scripted loopback server."""
