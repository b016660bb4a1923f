"""Every page a user reads has a Simplified Chinese translation beside it (`page.zh.md`, and
README.zh-CN.md), and the two cannot drift: the same commands and code blocks (comments may be
translated), the same generated tables, the same sections under the same anchors, and prose that is
Chinese. A Chinese page reads right on GitHub too, where README.zh-CN.md sends readers: it links the
Chinese twin of a page wherever one exists, and no heading shows a `{#id}` (GitHub ignores attr_list; the
anchor is an `<a id="..."></a>` line above the heading, which tools/docs_hooks.py folds back for the site)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown import Markdown  # type: ignore[import-untyped]  # ships no type information

from pudev.paths import REPO_ROOT

DOCS = REPO_ROOT / "docs"
# What users read: the start pages, everything about using the image and running it on clusters, and the
# mitigation the 2024 line's users must apply (the vulnerability gate).
USER_PAGES = sorted([*(DOCS / name for name in ("index.md", "quickstart.md", "troubleshooting.md", "faq.md",
                                                 "glossary.md", "publishing/vulnerability-gate.md")),
                     *((DOCS / "using").glob("*.md")), *((DOCS / "clusters").glob("*.md"))])
PAIRS = [(REPO_ROOT / "README.md", REPO_ROOT / "README.zh-CN.md"),
         *((page, page.with_suffix(".zh.md")) for page in USER_PAGES if not page.name.endswith(".zh.md"))]
# The README is GitHub's page only: the site's pages keep the English anchors.
SITE_PAIRS = PAIRS[1:]
# What a Chinese reader opens on GitHub.
CHINESE_PAGES = [REPO_ROOT / "README.zh-CN.md", *sorted(DOCS.rglob("*.zh.md"))]
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```", re.MULTILINE | re.DOTALL)
GENERATED = re.compile(r"<!-- ([\w-]+):start -->")
# The Chinese page renders the same table in Chinese.
GENERATED_ZH = {"tags": "tags-zh", "variants": "variants-zh"}
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$", re.MULTILINE)
# A Chinese heading's anchor: the HTML anchor on the line above it, which GitHub and the site both honour.
ANCHORED = re.compile(r'^(?:<a id="([\w-]+)"></a>\n)?#{1,6} (.+?)\s*$', re.MULTILINE)
# attr_list's `{#id}`, which GitHub shows as text.
ATTR_ID = re.compile(r"\{#[\w-]*\}")
# A shell, YAML or Dockerfile comment: from a # at the start of a line or after a space, to the end.
COMMENT = re.compile(r"(^|\s)#(?![!{]).*$")
COMMENTED = {"sh", "bash", "console", "yaml", "dockerfile", "toml", "python", ""}
CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")
README_ZH = REPO_ROOT / "README.zh-CN.md"
# A relative link to a page, with its text and anchor: `[版本线](docs/using/variants.md#the-lines)`.
PAGE_LINK = re.compile(r"\[([^\]]*)\]\((?![a-z]+:)([^)\s#]+\.md)(#[^)\s]*)?\)")
# A link that says it opens the English page (`[英文版](docs/index.md)`) means it.
SAYS_ENGLISH = re.compile(r"英文|English")


def _ids(pairs: list[tuple[Path, Path]]) -> list[str]:
    return [pair[0].relative_to(REPO_ROOT).as_posix() for pair in pairs]


def code_blocks(text: str) -> list[tuple[str, str]]:
    """Each fenced block's language and its code, comments left out where the language has them."""
    blocks = []
    for match in FENCE.finditer(text):
        info = match.group("info").strip().split(" ")[0]
        lines = match.group("body").splitlines()
        if info in COMMENTED:
            lines = [COMMENT.sub("", line).rstrip() for line in lines]
            lines = [line for line in lines if line.strip()]
        blocks.append((info, "\n".join(lines)))
    return blocks


def generated(text: str) -> list[str]:
    return [GENERATED_ZH.get(name, name) for name in GENERATED.findall(text)]


def english_anchors(page: Path) -> list[str]:
    """The anchors MkDocs gives the page's headings (a `#` line inside a code block is no heading)."""
    renderer = Markdown(extensions=["toc"])
    renderer.convert(FENCE.sub("", page.read_text()))

    def walk(tokens: list[dict[str, object]]) -> list[str]:
        found: list[str] = []
        for token in tokens:
            found.append(str(token["id"]))
            children = token["children"]
            assert isinstance(children, list)
            found += walk(children)
        return found

    return walk(renderer.toc_tokens)


def chinese_anchors(text: str) -> list[str]:
    """The anchor each heading of a Chinese page declares, as `<a id="..."></a>` on the line above it (a
    Chinese heading has no English slug)."""
    return [anchor or f"(no <a id> above '{heading}')" for anchor, heading in ANCHORED.findall(FENCE.sub("", text))]


def ids_in_headings(text: str) -> list[str]:
    """Each heading that shows an attr_list `{#id}`, which GitHub prints as text."""
    return [heading for _, heading in HEADING.findall(FENCE.sub("", text)) if ATTR_ID.search(heading)]


def prose(text: str) -> str:
    """The page less its code, links' targets, tables' code and HTML comments."""
    text = FENCE.sub("", text)
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)


def english_links_with_a_twin(text: str, folder: Path) -> list[tuple[str, Path]]:
    """Each link in `text` (a file in `folder`) to an English page that has a Chinese twin, and the twin; a
    link whose text says it is the English page is meant."""
    found = []
    for words, target, anchor in PAGE_LINK.findall(text):
        twin = (folder / target).with_suffix(".zh.md")
        if not target.endswith(".zh.md") and twin.exists() and not SAYS_ENGLISH.search(words):
            found.append((target + anchor, twin))
    return found


def test_every_user_page_is_listed() -> None:
    assert len(PAIRS) >= 20 and all(page.exists() for page, _ in PAIRS)


@pytest.mark.parametrize(("english", "chinese"), PAIRS, ids=_ids(PAIRS))
def test_a_user_page_has_a_chinese_page(english: Path, chinese: Path) -> None:
    assert chinese.exists(), f"{english.relative_to(REPO_ROOT)} has no Chinese page: write {chinese.name}"


@pytest.mark.parametrize("page", CHINESE_PAGES, ids=lambda path: path.relative_to(REPO_ROOT).as_posix())
def test_a_chinese_page_links_the_chinese_pages(page: Path) -> None:
    """GitHub opens the very file a link names: a link to `X.md` shows the English page even where `X.zh.md`
    exists. (On the site the i18n plugin resolves `X.zh.md` and `X.md` alike, so the twin works there too.)"""
    name = page.relative_to(REPO_ROOT).as_posix()
    wrong = english_links_with_a_twin(page.read_text(), page.parent)
    assert not wrong, f"{name} links English pages that have a Chinese twin; link the twin instead:\n" + \
        "\n".join(f"({link}): link {twin.relative_to(REPO_ROOT)}" for link, twin in wrong)


@pytest.mark.parametrize("page", CHINESE_PAGES, ids=lambda path: path.relative_to(REPO_ROOT).as_posix())
def test_no_chinese_heading_shows_its_id_on_github(page: Path) -> None:
    shown = ids_in_headings(page.read_text())
    assert not shown, (f"{page.relative_to(REPO_ROOT)}: GitHub shows these `{{#id}}` as text; put "
                       '`<a id="ID"></a>` on the line above the heading instead:\n' + "\n".join(shown))


@pytest.mark.parametrize(("english", "chinese"), PAIRS, ids=_ids(PAIRS))
def test_both_show_the_same_commands_and_code(english: Path, chinese: Path) -> None:
    if not chinese.exists():
        pytest.fail(f"no {chinese.name}")
    mine, theirs = code_blocks(english.read_text()), code_blocks(chinese.read_text())
    assert len(mine) == len(theirs), f"{english.name} has {len(mine)} code blocks, {chinese.name} {len(theirs)}"
    for number, (block, translated) in enumerate(zip(mine, theirs, strict=True), start=1):
        assert block == translated, f"code block {number} differs between {english.name} and {chinese.name}"
    assert generated(english.read_text()) == generated(chinese.read_text()), "the generated tables differ"


@pytest.mark.parametrize(("english", "chinese"), SITE_PAIRS, ids=_ids(SITE_PAIRS))
def test_both_have_the_same_sections_under_the_same_anchors(english: Path, chinese: Path) -> None:
    """Links into a page (`page.md#anchor`) then work in both languages."""
    if not chinese.exists():
        pytest.fail(f"no {chinese.name}")
    assert chinese_anchors(chinese.read_text()) == english_anchors(english)


@pytest.mark.parametrize(("english", "chinese"), PAIRS, ids=_ids(PAIRS))
def test_the_chinese_page_is_written_in_chinese(english: Path, chinese: Path) -> None:
    if not chinese.exists():
        pytest.fail(f"no {chinese.name}")
    text = prose(chinese.read_text())
    han, latin = len(CJK.findall(text)), len(LATIN.findall(text))
    assert han >= 0.5 * latin, f"{chinese.name} reads as English: {han} Chinese characters, {latin} Latin letters"


def test_the_checks_can_fail() -> None:
    """A changed command, a dropped block, or a missing anchor is caught; a translated comment is not."""
    english = "```sh\nmake test   # every test\n```\n"
    assert code_blocks(english) == code_blocks("```sh\nmake test   # 全部测试\n```\n")
    assert code_blocks(english) != code_blocks("```sh\nmake check   # 全部测试\n```\n")
    assert code_blocks("```text\nfix (x): y\n```\n") != code_blocks("```text\nfix (x): z\n```\n")
    assert chinese_anchors('<a id="quick-start"></a>\n## 快速上手\n## 排错\n') == [
        "quick-start", "(no <a id> above '排错')"]
    assert ids_in_headings("## 快速上手 {#quick-start}\n正文 {#not-a-heading}\n```sh\n# {#in-code}\n```\n") == [
        "快速上手 {#quick-start}"]
    assert ids_in_headings('<a id="quick-start"></a>\n## 快速上手\n') == []
    links = ("[快速上手](docs/quickstart.md#1-pick-a-tag)、[测试](docs/maintaining/tests.md)、[排错](docs/faq.zh.md)、"
             "[英文版](docs/index.md)")
    assert english_links_with_a_twin(links, REPO_ROOT) == [("docs/quickstart.md#1-pick-a-tag",
                                                           DOCS / "quickstart.zh.md")]
    # A docs page's sibling, as `docs/using/variants.zh.md` links it.
    assert english_links_with_a_twin("[ARM 主机](arm.md)、[排错](../troubleshooting.zh.md#x)",
                                     DOCS / "using") == [("arm.md", DOCS / "using" / "arm.zh.md")]
