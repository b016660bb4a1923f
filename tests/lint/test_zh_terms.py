"""One word per concept on the Chinese pages: docs/glossary.zh.md names the word, and a synonym that creeps
back into README.zh-CN.md, a `*.zh.md` page or the site's Chinese navigation (mkdocs.yml) fails here, with
the file, the word and the glossary's word. Inline code is left out; a code block's comments are prose and
are checked (no command contains a Chinese word)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

DOCS = REPO_ROOT / "docs"
GLOSSARY = DOCS / "glossary.zh.md"
CHINESE = [REPO_ROOT / "README.zh-CN.md", *sorted(DOCS.rglob("*.zh.md")), REPO_ROOT / "mkdocs.yml"]
# The word the pages do not use, and the glossary's word for that concept.
NOT_USED = {
    "工具链": "CUDA 工具包",  # a CUDA toolkit, as NVIDIA's Chinese documentation calls it
    "会变的标签": "移动标签",
    "不变的标签": "永不移动",
    "发布日": "发版日",
    "晋升": "转正",  # promote: a tested candidate is published
    "软件源镜像": "镜像源",  # a package mirror; 镜像 alone is a container image
    "镜像站": "镜像源",
    "最新线": "最新版本线",
    "2024 线": "2024 版本线",
    "stand-in": "替身镜像",  # English only as a gloss beside it, in full-width brackets (GLOSSES)
}
INLINE_CODE = re.compile(r"`[^`\n]*`")
GLOSSES = ("替身镜像\uff08stand-in\uff09", "stand-in\uff08替身镜像\uff09")


def wrong_words(text: str) -> list[tuple[str, int, str]]:
    """Each word the pages do not use that `text` holds outside inline code: the word, how often, the
    glossary's word."""
    text = INLINE_CODE.sub("", text)
    for gloss in GLOSSES:
        text = text.replace(gloss, "")
    return [(word, text.count(word), ours) for word, ours in NOT_USED.items() if word in text]


@pytest.mark.parametrize("path", CHINESE, ids=lambda path: path.relative_to(REPO_ROOT).as_posix())
def test_the_chinese_pages_use_the_glossarys_words(path: Path) -> None:
    wrong = wrong_words(path.read_text())
    name = path.relative_to(REPO_ROOT).as_posix()
    assert not wrong, f"{name} uses words docs/glossary.zh.md replaces:\n" + "\n".join(
        f"{name}: '{word}' ({count}x): write '{ours}'" for word, count, ours in wrong)


def test_the_glossary_defines_each_word_the_pages_use() -> None:
    glossary = GLOSSARY.read_text()
    missing = sorted({ours for ours in NOT_USED.values() if ours not in glossary})
    assert not missing, f"docs/glossary.zh.md does not define {missing}"


def test_the_check_can_fail() -> None:
    assert wrong_words("每个镜像有两套 CUDA 工具链 发布日换新 torch") == [("工具链", 1, "CUDA 工具包"),
                                                                 ("发布日", 1, "发版日")]
    assert wrong_words("两套 CUDA 工具包 `grep 工具链` 是代码") == []
    assert wrong_words(f"构建 stand-in profile 即{GLOSSES[0]}") == [("stand-in", 1, "替身镜像")]
