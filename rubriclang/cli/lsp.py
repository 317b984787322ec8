"""`rbg lsp`: run the language server over standard input and output.

Editors start it themselves (the VS Code extension in `editors/vscode` runs
`rbg lsp`); it needs the `lsp` extra: `pip install 'rubriclang[lsp]'`.
"""

from __future__ import annotations

import click


@click.command()
def lsp() -> None:
    """Run the language server (stdio), for editors."""
    try:
        from rubriclang.lsp.server import serve
    except ModuleNotFoundError as exc:
        if exc.name not in ("pygls", "lsprotocol"):
            raise
        raise click.ClickException(
            f"the language server needs `{exc.name}`: install it with `pip install 'rubriclang[lsp]'`"
        ) from None
    serve()
