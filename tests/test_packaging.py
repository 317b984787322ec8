"""What a regular (non-editable) install ships — what pre-commit and a wheel do:
every Python package of the source tree and every data file beside it."""

import fnmatch
import subprocess
import tomllib
from distutils.core import run_setup
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages() -> list[str]:
    # setup.py's own discovery, run without building anything.
    return run_setup(str(ROOT / "setup.py"), stop_after="init").packages


def _source_dir(package: str) -> PurePosixPath:
    mapped = CONFIG.get("package-dir", {})
    return PurePosixPath(mapped[package]) if package in mapped else PurePosixPath(*package.split("."))


def _shipped_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "rubriclang", *CONFIG["package-dir"].values()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [p for p in out.split() if "__pycache__" not in p]


def test_every_python_package_of_the_tree_is_discovered():
    packages = set(_packages())
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rubriclang").rglob("*.py")}
    found |= set(CONFIG["package-dir"])
    assert found <= packages, f"not discovered: {sorted(found - packages)}"


def test_every_data_file_is_package_data_of_a_shipped_package():
    data = CONFIG["package-data"]
    dirs = {_source_dir(p): p for p in _packages()}
    missing = []
    for name in _shipped_files():
        path = PurePosixPath(name)
        if path.suffix == ".py":
            continue
        # setuptools matches a package's patterns against paths relative to it.
        owners = [(d, pkg) for d, pkg in dirs.items() if path.is_relative_to(d)]
        if not any(fnmatch.fnmatch(str(path.relative_to(d)), pat) for d, pkg in owners for pat in data.get(pkg, ())):
            missing.append(name)
    assert not missing, f"add to [tool.setuptools.package-data]: {missing}"


def test_the_version_is_written_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert CONFIG["dynamic"]["version"] == {"attr": "rubriclang.__version__"}


def test_the_installed_version_is_the_one_written():
    from click.testing import CliRunner

    import rubriclang
    from rubriclang.cli.main import cli

    assert CliRunner().invoke(cli, ["--version"]).output.split()[-1] == rubriclang.__version__
