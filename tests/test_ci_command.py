"""CI runs the README's test command, with every test: the Makefile leaves the
slow tests out of `make test` except under RBG_CI=1, which .ci/run sets."""

import re

from conftest import REPO_ROOT


def test_ci_runs_the_readmes_test_command_with_rbg_ci():
    readme = (REPO_ROOT / "README.md").read_text("utf-8")
    ci = (REPO_ROOT / ".ci" / "run").read_text("utf-8")
    assert re.search(r"^make test\s", readme, re.M), "README's set-up names `make test`"
    assert re.search(r"^RBG_CI=1 make test$", ci, re.M)


def test_make_test_leaves_out_slow_tests_only_outside_ci():
    makefile = (REPO_ROOT / "Makefile").read_text("utf-8")
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert '$(if $(RBG_CI),,-m "not slow")' in recipe
