"""The docs are a gate like the code: the MkDocs site builds in strict mode (a broken link, anchor or nav
entry fails), the README's links into docs/ resolve, and the commands the docs show exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markdown import Markdown  # type: ignore[import-untyped]  # ships no type information

from pudev.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
READMES = sorted(REPO_ROOT.glob("README*.md"))  # and its translations
DOCS = REPO_ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
HTML_ANCHOR = re.compile(r'^<a id="([\w-]+)"></a>$', re.MULTILINE)


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=config.parent, capture_output=True, text=True,
                          check=False, timeout=120)


def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    result = _mkdocs_build(REPO_ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"


@pytest.mark.parametrize(("link", "complaint"), [("using/shell.md#no-such-heading", "no-such-heading"),
                                                 ("using/no-such-page.md", "no-such-page.md")])
def test_a_broken_link_or_anchor_fails_the_strict_build(tmp_path: Path, link: str, complaint: str) -> None:
    """Keeps the gate honest: the same build on a copy with one link broken must fail and say which."""
    shutil.copy(REPO_ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copy(REPO_ROOT / "CHANGELOG.md", tmp_path / "CHANGELOG.md")  # the changelog page includes it
    (tmp_path / "tools").mkdir()
    shutil.copy(REPO_ROOT / "tools" / "docs_hooks.py", tmp_path / "tools" / "docs_hooks.py")  # mkdocs.yml's hook
    shutil.copytree(DOCS, tmp_path / "docs")
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text() + f"\n[broken]({link})\n")
    result = _mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0 and complaint in result.stderr + result.stdout, result.stderr


def _heading_ids(page: Path) -> set[str]:
    """The anchors MkDocs gives the page's headings: Python-Markdown's toc, which MkDocs uses."""
    renderer = Markdown(extensions=["toc"])
    renderer.convert(FENCE.sub("", page.read_text()))  # a `#` line in a code block is no heading

    def walk(tokens: list[dict[str, object]]) -> set[str]:
        found: set[str] = set()
        for token in tokens:
            found.add(str(token["id"]))
            children = token["children"]
            assert isinstance(children, list)
            found |= walk(children)
        return found

    return walk(renderer.toc_tokens)


def _github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen (none collapsed)."""
    text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def _relative_links(text: str) -> list[str]:
    return [link for link in LINK.findall(text) if not re.match(r"[a-z]+:", link)]


@pytest.mark.parametrize("readme", READMES, ids=lambda path: path.name)
def test_every_readme_link_resolves(readme: Path) -> None:
    """The READMEs sit outside MkDocs' docs_dir, so their links are checked here: the file exists, and an
    anchor names a heading of that file, under MkDocs' rules and GitHub's alike (both render it); into a
    Chinese page, the `<a id>` above a heading (or GitHub's slug of the heading)."""
    links = _relative_links(readme.read_text())
    assert any(link.startswith("docs/") for link in links), f"{readme.name} no longer links into docs/"
    broken = []
    for link in links:
        path, _, anchor = link.partition("#")
        target = (README.parent / path) if path else README
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md":
            headings = [line.lstrip("#").strip() for line in target.read_text().splitlines()
                        if re.match(r"#{1,6} ", line)]
            if target.name.endswith(".zh.md"):
                # A Chinese heading's anchor is the `<a id="..."></a>` above it, which GitHub and the site both
                # honour (tests/lint/test_translations.py); GitHub's own slug of the heading works there too.
                anchors = set(HTML_ANCHOR.findall(target.read_text())) | {_github_slug(h) for h in headings}
                if anchor not in anchors:
                    broken.append(f"{link}: {target.name} has no <a id=\"{anchor}\"></a> nor a heading GitHub "
                                  "gives that anchor")
            elif anchor not in _heading_ids(target):
                broken.append(f"{link}: {target.name} has no heading with the anchor #{anchor}")
            elif anchor not in {_github_slug(heading) for heading in headings}:
                broken.append(f"{link}: GitHub's anchor for that heading differs; reword it")
    assert not broken, f"broken links in {readme.name}:\n" + "\n".join(broken)


def _documents() -> list[Path]:
    return [*READMES, *sorted(DOCS.rglob("*.md"))]


def _code(text: str) -> str:
    """What the page shows as code: fenced blocks and inline spans."""
    return "\n".join([*FENCE.findall(text), *CODE_SPAN.findall(FENCE.sub("", text))])


def _make_targets() -> list[str]:
    makefile = (REPO_ROOT / "Makefile").read_text()
    return re.findall(r"^([a-z][\w%-]*):", makefile, re.MULTILINE)


def test_every_make_target_the_docs_show_exists() -> None:
    patterns = [re.compile(re.escape(target).replace("%", ".+") + "$") for target in _make_targets()]
    shown = {name for document in _documents()
             for name in re.findall(r"(?<![\w-])make ([a-z][\w-]*)", _code(document.read_text()))}
    assert shown, "the docs show no make command"
    missing = sorted(name for name in shown if not any(pattern.match(name) for pattern in patterns))
    assert not missing, f"the docs show make targets the Makefile lacks: {missing}"


def _subcommands(*command: str) -> set[str]:
    """The subcommands a `pudev` entry point lists in its --help."""
    result = subprocess.run([sys.executable, *command, "--help"], capture_output=True, text=True, check=True,
                            cwd=REPO_ROOT, timeout=60)
    return set(re.findall(r"^ {4}([a-z][\w-]*)(?:\s|$)", result.stdout, re.MULTILINE))


# History, never regenerated: it names commands as they were when measured, retired ones too.
HISTORY = DOCS / "maintaining/benchmarks-log.md"


def test_every_pudev_command_the_docs_show_exists() -> None:
    """On the host (`pudev.cli`) or inside the image (`pudev.image.cli`): a renamed command fails here."""
    known = _subcommands("-m", "pudev.cli") | _subcommands("-c", "from pudev.image.cli import main; main()")
    assert {"build", "test", "verify", "selftest"} <= known
    assert HISTORY in _documents()
    shown = {name for document in _documents() if document != HISTORY
             for name in re.findall(r"(?<![\w./-])(?:\.venv/bin/)?pudev ([a-z][\w-]*)", _code(document.read_text()))}
    assert shown, "the docs show no pudev command"
    missing = sorted(shown - known)
    assert not missing, f"the docs show pudev commands that neither CLI has: {missing}"


def test_every_toolkit_the_docs_switch_to_is_in_an_image() -> None:
    """`cuda-switch X.Y` on a page is a claim that some image has toolkit X.Y (it once showed 12.4, which
    none had)."""
    from pudev.config.loader import load_matrix
    from pudev.paths import VARIANTS_FILE

    shipped = {version for variant in load_matrix(VARIANTS_FILE).every_build() for version in variant.toolkit_versions}
    shown = {(document.name, version) for document in _documents()
             for version in re.findall(r"cuda-switch (\d+\.\d+)\b", _code(document.read_text()))}
    assert shown, "the docs show no cuda-switch VERSION"
    wrong = sorted(f"{page}: cuda-switch {version}" for page, version in shown if version not in shipped)
    assert not wrong, f"no image has these toolkits ({', '.join(sorted(shipped))}): {wrong}"


def test_the_site_folds_a_chinese_headings_anchor_into_the_heading() -> None:
    """tools/docs_hooks.py: GitHub's `<a id>` line above a heading becomes the site's `{#id}` on it, so the
    site's heading ids (permalinks, table of contents) stay the English ones; a code block is left alone."""
    from docs_hooks import fold_anchors

    page = ('<a id="the-lines"></a>\n## 版本线\n\n<a id="loose"></a>\n\n## 别的\n'
            '```html\n<a id="code"></a>\n# 代码\n```\n')
    assert fold_anchors(page) == ('## 版本线 {#the-lines}\n\n<a id="loose"></a>\n\n## 别的\n'
                                  '```html\n<a id="code"></a>\n# 代码\n```\n')


# Where the test harness and the host's setup read their switches (tests/image runs inside the image: the
# image's own variables are the user's docs').
SWITCH_READERS = ("tests/conftest.py", "tests/e2e", "tools", "scripts/host-setup.sh", ".ci/run", "Makefile")
SWITCH = re.compile(r"\bPUDEV_[A-Z][A-Z_]*[A-Z]\b")


def _switch_table() -> set[str]:
    text = (DOCS / "maintaining/tests.md").read_text()
    section = text.split("## Switches", 1)[1].split("\n## ", 1)[0]
    return {name for row in section.splitlines() if row.startswith("| `") for name in
            SWITCH.findall(row.split("|")[1])}


def _switches_read(roots: tuple[str, ...]) -> set[str]:
    found: set[str] = set()
    for root in roots:
        path = REPO_ROOT / root
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            found |= set(SWITCH.findall(file.read_text()))
    return found


def test_the_tests_page_lists_every_switch_the_harness_reads() -> None:
    from pudev.common.environment import SETTINGS

    # The suites' own runtime settings that pudev reads are the CLI's (docs/maintaining/cli.md), not the harness's,
    # and the image's are the image's; the rest must be in the table.
    image_side = set(SETTINGS) - {"PUDEV_REQUIRE_GPU", "PUDEV_STRICT"}
    image_side |= {"PUDEV_UID", "PUDEV_GID", "PUDEV_USER", "PUDEV_ROOT", "PUDEV_SUITE_CCACHE_DIR",
                   "PUDEV_JUPYTER_NO_AUTH", "PUDEV_START_HOOKS_DIR", "PUDEV_SKIP_START_HOOKS", "PUDEV_CGROUP_ROOT",
                   "PUDEV_COMPILE_LOG", "PUDEV_NO_DERIVED_JOBS", "PUDEV_DERIVED_MAX_JOBS", "PUDEV_RECORD",
                   "PUDEV_IMAGE", "PUDEV_REGISTRY_HOST", "PUDEV_REGISTRY_USERNAME", "PUDEV_REGISTRY_PASSWORD",
                   "PUDEV_WHEELHOUSE", "PUDEV_TESTS_DIR", "PUDEV_SOURCE_URL"}
    missing = _switches_read(SWITCH_READERS) - image_side - _switch_table()
    assert not missing, f"docs/maintaining/tests.md's switch table lacks {sorted(missing)}: add a row for each"


def test_the_switch_check_fails_for_a_switch_left_out() -> None:
    listed = _switch_table()
    assert {"PUDEV_REQUIRE_ENGINE", "PUDEV_REPLACE_ENGINE", "PUDEV_DISK_GB"} <= listed
    assert "PUDEV_NOT_A_SWITCH" not in listed and "PUDEV_NOT_A_SWITCH" in SWITCH.findall("x PUDEV_NOT_A_SWITCH y")
