"""Tests of the editor support: the language server and the VS Code extension."""
