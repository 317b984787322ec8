"""`python -m rubriclang.audit.html DIR`: render DIR/report.json into DIR/report.html."""

from __future__ import annotations

import sys

from rubriclang.audit.html.write import ReportError, write_html

USAGE = "usage: python -m rubriclang.audit.html DIR   (renders DIR/report.json into DIR/report.html)"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if len(argv) != 1 else sys.stdout)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    try:
        path = write_html(argv[0])
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
