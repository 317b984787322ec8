"""What a regular (non-editable) install ships — what pre-commit and a wheel do:
every Python package of the source tree and every data file beside it, laid out
so that the installed package imports exactly as the checkout does."""

import fnmatch
import os
import subprocess
import sys
import tomllib
import zipfile
from distutils.core import run_setup
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
TOP_LEVEL = ("rubriclang", "stdlib_ops")
GRAMMAR = "grammar/rubric.lark"


def _packages() -> list[str]:
    # setup.py's own discovery, run without building anything.
    return run_setup(str(ROOT / "setup.py"), stop_after="init").packages


def _tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *paths], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [p for p in out.split() if "__pycache__" not in p]


def test_every_python_package_of_the_tree_is_discovered():
    packages = set(_packages())
    found = {".".join(p.parent.relative_to(ROOT).parts) for top in TOP_LEVEL for p in (ROOT / top).rglob("*.py")}
    assert found <= packages, f"not discovered: {sorted(found - packages)}"


def test_the_tree_is_the_package_root():
    # No package is mapped to a folder of another name: a checkout on sys.path
    # imports the same modules as an install, and an editable install is a path entry.
    assert CONFIG["package-dir"] == {"": "."}


def test_every_data_file_is_package_data_of_a_shipped_package():
    data = CONFIG["package-data"]
    dirs = {PurePosixPath(*p.split(".")): p for p in _packages()}
    missing = []
    for name in _tracked(*TOP_LEVEL):
        path = PurePosixPath(name)
        if path.suffix == ".py":
            continue
        # setuptools matches a package's patterns against paths relative to it.
        owners = [(d, pkg) for d, pkg in dirs.items() if path.is_relative_to(d)]
        if not any(fnmatch.fnmatch(str(path.relative_to(d)), pat) for d, pkg in owners for pat in data.get(pkg, ())):
            missing.append(name)
    assert not missing, f"add to [tool.setuptools.package-data]: {missing}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built offline from a copy of the tree's files, those
    not yet committed too (the build writes build/ and *.egg-info beside its sources)."""
    src = tmp_path_factory.mktemp("src")
    for name in _tracked("--cached", "--others", "--exclude-standard"):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((ROOT / name).read_bytes())
    out = tmp_path_factory.mktemp("dist")
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation"]
    subprocess.run([*pip, "-w", str(out), str(src)], check=True, capture_output=True)
    (built,) = out.glob("rubriclang-*.whl")
    return built


# Run in a child whose sys.path starts with `root`: every module under the
# top-level packages (imported, so a module that imports only in a checkout
# fails here), and the grammar's first line.
_LIST = r"""
import importlib, pkgutil, sys
from rubriclang import packaged
names = []
for top in sys.argv[2:]:
    package = importlib.import_module(top)
    assert package.__file__.startswith(sys.argv[1]), package.__file__
    names.append(top)
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        importlib.import_module(info.name)
        names.append(info.name)
print("\n".join(sorted(names)))
print(packaged.grammar().splitlines()[0])
"""


def _modules_on(root: Path, cwd: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", _LIST, str(root), *TOP_LEVEL], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.mark.slow  # builds the wheel (setuptools) and imports every module twice
def test_an_installed_wheel_imports_the_same_modules_as_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as whl:
        assert GRAMMAR not in whl.namelist()  # only inside the package, never a top-level `grammar`
        assert whl.read(f"rubriclang/{GRAMMAR}") == (ROOT / GRAMMAR).read_bytes()
        whl.extractall(site)  # a pure wheel installs as its files
    assert _modules_on(site, tmp_path) == _modules_on(ROOT, tmp_path)


@pytest.mark.slow  # builds the wheel
def test_an_installed_wheel_checks_the_examples(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as whl:
        whl.extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = "import sys; from rubriclang.cli.main import main; sys.argv[0] = 'rbg'; main()"
    out = subprocess.run(
        [sys.executable, "-c", run, "check", str(ROOT / "examples")], cwd=tmp_path, env=env, capture_output=True
    )
    assert out.returncode == 0, out.stderr


def test_the_version_is_written_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert CONFIG["dynamic"]["version"] == {"attr": "rubriclang.__version__"}


def test_the_installed_version_is_the_one_written():
    from click.testing import CliRunner

    import rubriclang
    from rubriclang.cli.main import cli

    assert CliRunner().invoke(cli, ["--version"]).output.split()[-1] == rubriclang.__version__
