"""`rbg lsp`: run the language server over standard input and output.

Editors start it themselves (the VS Code extension in `editors/vscode` runs
`rbg lsp`); it needs the `lsp` extra: `pip install 'rubriclang[lsp]'`.
"""

from __future__ import annotations

import click


@click.command()
@click.option(
    "--stdio",
    is_flag=True,
    help="Talk over standard input and output: the only transport, and the default; "
    "accepted because many clients pass it.",
)
def lsp(stdio: bool) -> None:
    """Run the language server (stdio), for editors."""
    try:
        from rubriclang.lsp.server import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("pygls", "lsprotocol"):
            raise
        raise click.ClickException(
            "the language server needs pygls: install it with `pip install 'rubriclang[lsp]'`"
        ) from None
    serve()
