"""Data flows one way (README, Layout): the import contracts of pyproject.toml,
which `make lint` runs with import-linter, place every module of the package
in a layer, and they hold."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import needs

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def _layered() -> set[str]:
    (flow,) = [c for c in CONFIG["contracts"] if c["type"] == "layers"]
    names = set()
    for layer in flow["layers"]:
        for part in layer.replace(":", "|").split("|"):
            names.add(part.strip().strip("()"))
    return names


def _modules() -> set[str]:
    """The package's own modules and subpackages, one level down."""
    out = set()
    for entry in (ROOT / "rubriclang").iterdir():
        if entry.is_dir() and (entry / "__init__.py").exists():
            out.add(f"rubriclang.{entry.name}")
        elif entry.suffix == ".py" and entry.name != "__init__.py":
            out.add(f"rubriclang.{entry.stem}")
    return out


def test_every_module_of_the_package_has_a_place_in_the_flow():
    # A module left out of the layers could import anything, and be imported by anything.
    assert _modules() - _layered() == set()
    assert _layered() - _modules() <= {"rubriclang.items"}  # optional: (rubriclang.items)


def test_every_folder_of_modules_is_a_package_the_contracts_can_see():
    # import-linter sees a package only through its __init__.py: a folder of
    # modules without one (as interp/ was) escaped every contract.
    folders = [
        d for d in (ROOT / "rubriclang").rglob("*") if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py"))
    ]
    assert [str(d.relative_to(ROOT)) for d in folders if not (d / "__init__.py").exists()] == []


LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


@needs(LINT_IMPORTS.exists(), "import-linter is not installed (pip install -e '.[dev]')")
def test_the_import_contracts_hold():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert result.returncode == 0, result.stdout[-4000:]
