"""The standard catalog, a catalog package like any plugin's: the TOML data
beside this module, and the behaviour of each name it declares."""

from stdlib_ops.operators import OPERATORS
from stdlib_ops.procedures import PROCEDURES

__all__ = ["OPERATORS", "PROCEDURES"]
