"""No orphan goldens: every file of a golden corpus is read by some test, so a
golden no test compares cannot go stale unnoticed."""

from pathlib import Path

import test_corpus
import test_fmt
from review import test_diff_corpus, test_graph_pictures

TESTS = Path(__file__).resolve().parent
# Each corpus folder, and the test module that reads its files.
READERS = {
    TESTS / "corpus" / "valid": test_corpus,
    TESTS / "corpus" / "invalid": test_corpus,
    TESTS / "corpus" / "fmt": test_fmt,
    TESTS / "corpus" / "diff": test_diff_corpus,
    TESTS / "review" / "graphs": test_graph_pictures,
}


def test_every_corpus_folder_has_a_reader():
    assert {p for p in (TESTS / "corpus").iterdir() if p.is_dir()} <= set(READERS)


def test_every_file_of_a_corpus_is_read_by_a_test():
    read = set().union(*(module.corpus_files() for module in set(READERS.values())))
    present = {p for folder in READERS for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert sorted(str(p.relative_to(TESTS)) for p in present - read) == []
