"""Every Python package of the source tree is named in pyproject.toml, so a
regular (non-editable) install — what pre-commit does — ships all of it."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_subpackage_is_listed_for_installation():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = config.get("package-dir", {})
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "rubriclang").rglob("__init__.py")
    }
    found |= set(mapped)
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
