"""What the `build_*.py` scripts of the structured-data examples share: their
command line (`--data DIR --out DIR`), `rbg items convert` run in-process,
and the licence files copied beside each slice.

`--data` is one data set's folder in the layout of ../shared/data (for
example `../shared/data/begin_wow`), so the same script and judges run on
another copy of that data set; `--out` is the example's folder.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"


def main(doc: str, dataset: str, example: str, build: Callable[[Path, Path, Path], str], argv=None) -> None:
    """Parse `--data`/`--out` (defaults: the shared copy, examples/EXAMPLE),
    run `build(data, out, scratch)` and print its summary."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED / dataset, help=f"the {dataset} folder")
    parser.add_argument("--out", type=Path, default=ROOT / "examples" / example, help="the example's folder")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        raise SystemExit(f"{args.data}: no such folder (give the {dataset} data set's folder with --data)")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        print(build(args.data, args.out, Path(scratch)))


def write_jsonl(path: Path, rows: Iterable[dict]) -> Path:
    """One compact JSON object a line, `\\n` line ends (a scratch file for convert)."""
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def convert(src: Path, out: Path, *args: str) -> None:
    """`rbg items convert SRC -o OUT ARGS...`, in this process; its refusal
    (exit 2, message at file:line) stops the script with the same status."""
    import click

    from rubriclang.cli.main import cli

    argv = ["items", "convert", str(src), "-o", str(out), *args]
    try:
        cli.main(argv, prog_name="rbg", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None


def copy_licences(data: Path, out: Path, names: Iterable[str]) -> None:
    """The data set's licence and notice files, beside the slice taken from it."""
    for name in names:
        shutil.copyfile(data / name, out / name)
