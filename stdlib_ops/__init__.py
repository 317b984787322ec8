"""The standard catalog, a catalog package like any plugin's: the TOML data
beside this module, and the behaviour of each name it declares."""

from rubriclang.stdlib_ops.operators import OPERATORS
from rubriclang.stdlib_ops.procedures import PROCEDURES

from rubriclang.catalog.rules import RULES as OUTPUT_RULES

__all__ = ["OPERATORS", "OUTPUT_RULES", "PROCEDURES"]
