"""The results page: a page of the HTML book that opens with the paper's claims at a glance, each linked to the
chapter section that shows it; and chapter 5's prose within the book's length."""

import json
import re
import warnings
from pathlib import Path

import pytest

from albert_mini.book import html_book

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / html_book.RESULTS
VERDICTS = ("reproduces", "partly reproduces", "does not reproduce at this scale", "untested")
PLACEHOLDER = "<!-- sop_language: the lead fills this row -->"
LINK = re.compile(r"\[[^\]]+\]\(([^)#]+)#([^)]+)\)")
PROSE_LIMIT = 2800  # words of markdown in a chapter


def glance_rows() -> list[list[str]]:
    """The cells of each row of the first table under the page's "At a glance" heading."""
    text = PAGE.read_text()
    section = text[text.index("## At a glance"):]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in line.strip("|").split("|")])
    return table[2:]  # past the header and its rule


def headings(notebook: Path) -> set[str]:
    """The anchors MyST gives the notebook's headings of levels 1-3 (the book's myst_heading_anchors)."""
    from myst_parser.mdit_to_docutils.base import default_slugify

    found = set()
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                match = re.match(r"(#{1,3}) (.+)", line)
                if match:
                    found.add(default_slugify(match.group(2)))
    return found


def test_the_page_opens_with_one_table_of_claims_each_with_a_verdict():
    text = PAGE.read_text()
    first_table = text.index("\n|")
    assert text.index("## At a glance") < first_table < text.index("## Committed results")
    rows = glance_rows()
    assert len(rows) >= 10
    for claim, verdict, _ in rows:
        assert claim
        if PLACEHOLDER in verdict:
            continue
        named = re.match(r"\*\*(.+?)\*\*", verdict)
        assert named and named.group(1) in VERDICTS, f"{claim}: {verdict}"
    assert sum(PLACEHOLDER in verdict for _, verdict, _ in rows) <= 1  # the built language's row, until filled
    assert {re.match(r"\*\*(.+?)\*\*", v).group(1) for _, v, _ in rows if PLACEHOLDER not in v} == set(VERDICTS)


def test_each_link_of_the_table_opens_a_chapter_heading_that_exists():
    links = [LINK.search(where) for _, _, where in glance_rows()]
    assert sum(link is not None for link in links) >= 10
    for link in filter(None, links):
        target = (PAGE.parent / link.group(1)).resolve()
        assert target.parent == ROOT / "chapters" and target.suffix == ".ipynb" and target.is_file(), link.group(0)
        assert link.group(2) in headings(target), f"{link.group(0)}: no such heading in {target.name}"


def test_a_link_to_a_heading_the_chapter_lacks_is_caught():
    chapter_5 = headings(ROOT / "chapters/05_sentence_order_prediction.ipynb")
    assert "why-nsp-is-easy-it-mixes-topic-with-coherence" in chapter_5 and "stage-b" not in chapter_5


def test_the_book_stages_the_page_where_its_links_resolve_and_lists_it(tmp_path):
    notebooks = html_book.stage(ROOT, tmp_path / "src")
    staged = tmp_path / "src" / html_book.RESULTS
    assert staged.read_bytes() == PAGE.read_bytes()
    index = (tmp_path / "src" / "index.md").read_text()
    assert ":caption: Results\n\ndata/results/README\n" in index and "(data/results/README)" in index
    assert notebooks and all((staged.parent / "../../chapters" / n.name).resolve().is_file() for n in notebooks)


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("book") / "html"
    with warnings.catch_warnings():  # Sphinx's notices to extension authors about its next major version
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        html_book.build(out, ROOT)  # warnings are errors: a link MyST cannot resolve fails the build
    return out


@pytest.mark.slow
def test_the_built_book_has_the_page_and_every_link_of_its_table_lands_on_an_id(book):
    page = book / html_book.RESULTS.with_suffix(".html")
    html = page.read_text()
    assert "At a glance" in html and "does not reproduce at this scale" in html
    assert 'href="data/results/README.html"' in (book / "index.html").read_text()
    hrefs = re.findall(r'href="(\.\./\.\./chapters/[^"#]+\.html)#([^"]+)"', html)
    assert len(hrefs) >= 10
    for target, anchor in hrefs:
        target_page = (page.parent / target).resolve()
        assert target_page.is_file() and f'id="{anchor}"' in target_page.read_text(), f"{target}#{anchor}"


def prose_words(notebook: Path) -> int:
    """Words of a chapter's markdown cells, split at whitespace."""
    cells = json.loads(notebook.read_text())["cells"]
    return sum(len("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")


def test_chapter_5_keeps_its_prose_within_the_books_length():
    assert prose_words(ROOT / "chapters/05_sentence_order_prediction.ipynb") <= PROSE_LIMIT
    assert prose_words(ROOT / "chapters/11_research_log.ipynb") > PROSE_LIMIT  # the measure counts: the log is longer
