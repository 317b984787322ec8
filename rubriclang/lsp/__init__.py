"""The `.rbg` language server (`rbg lsp`).

Every module but `server` is free of the protocol library: they work on
source text, the AST and the checked graph in the parser's own positions
(1-based lines, 1-based code-point columns), and `server` alone converts to
and from the protocol's positions (through `positions`).
"""
