"""Reading a data file shipped inside a package (a catalog's TOML, the
diagnostic codes) on the `rbg check` path.

`importlib.resources` is the general way, but importing it loads tempfile,
shutil, zipfile and more: several milliseconds of a cold check, for reading
three small files. A package imported from the file system (every installed
or editable one) has its files beside its `__init__.py`, so they are read
from there; any other package (zipped, namespace) goes through
`importlib.resources`, imported then.
"""

from __future__ import annotations

import os
from importlib.machinery import SourceFileLoader, SourcelessFileLoader
from types import ModuleType


def folder(package: ModuleType) -> str:
    """Where the package's files are, for messages."""
    file: str | None = getattr(package, "__file__", None)
    if file is not None:
        return os.path.dirname(file)
    from importlib import resources

    return str(resources.files(package))


def read_text(package: ModuleType, name: str) -> str:
    """The text (UTF-8) of the data file `name` in `package`. Raises
    FileNotFoundError when the package has no such file."""
    file: str | None = getattr(package, "__file__", None)
    if file is not None and isinstance(package.__loader__, (SourceFileLoader, SourcelessFileLoader)):
        with open(os.path.join(os.path.dirname(file), name), encoding="utf-8") as fh:
            return fh.read()
    from importlib import resources

    return resources.files(package).joinpath(name).read_text("utf-8")


def grammar() -> str:
    """The text of the .rbg grammar, `grammar/rubric.lark`. A checkout keeps the
    grammar folder beside the package; an install ships it inside the package
    (setup.py), so that a checkout on `sys.path` needs no install to run."""
    import rubriclang

    try:
        return read_text(rubriclang, _GRAMMAR)
    except FileNotFoundError:
        with open(os.path.join(os.path.dirname(folder(rubriclang)), _GRAMMAR), encoding="utf-8") as fh:
            return fh.read()


_GRAMMAR = os.path.join("grammar", "rubric.lark")
