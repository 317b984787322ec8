"""The catalog of judgment types, operators, procedures and blocks (data)."""

from rubriclang.catalog.loader import Catalog, CatalogError, load_catalog
from rubriclang.catalog.types import BOOL, JType

__all__ = ["BOOL", "Catalog", "CatalogError", "JType", "load_catalog"]
