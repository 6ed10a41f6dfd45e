"""User documents and the package's source say what the project is, not how
its work was organised: no work periods, no issue numbers (the history is in
CHANGELOG.md)."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The words of a lab notebook: numbered work periods, issue numbers, "earlier".
NOTEBOOK = re.compile(r"stop [0-9]+|this stop|earlier|\(issue [0-9]+\)", re.I)


def _hits(paths):
    return [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in paths
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if NOTEBOOK.search(line)
    ]


def test_the_user_documents_tell_no_history():
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    assert _hits(docs) == []


def test_the_package_source_tells_no_history():
    assert _hits(sorted((REPO / "habitat_ver").rglob("*.py"))) == []
