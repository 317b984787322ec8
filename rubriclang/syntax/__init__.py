"""Source text to AST. Lark's trees and tokens never leave this package."""

from rubriclang.syntax.parser import parse, parse_file

__all__ = ["parse", "parse_file"]
