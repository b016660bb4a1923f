"""One word per concept on the Chinese pages: docs/glossary.zh.md names the word, and a synonym that creeps
back into README.zh-CN.md, a `*.zh.md` page or the site's Chinese navigation (mkdocs.yml) fails here, with
the file, the word and the glossary's word. Inline code is left out, and so is a word in Chinese quotes
(“主机”: the glossary naming a word it does not use); a code block's comments are prose and are checked (no
command contains a Chinese word).

The concepts the pages once mixed up: 镜像 is a container image, and only that (a package mirror is 镜像源,
a registry mirror for Docker Hub is 镜像加速器); a variant (变体, one tag) is not a line (版本线, the variants
that move together), and 线 is never alone; the host is 宿主机; a stand-in is 替身镜像, and a profile, the
overrides that build a variant on stand-ins, stays profile, as the commands spell it."""

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
    # A package mirror is 镜像源: 软件源 is any package repository, the official one too.
    "软件源": "镜像源",
    "清华源": "镜像源",  # 清华镜像源
    "阿里云源": "镜像源",  # 阿里云镜像源
    "镜像地址": "镜像源",
    # A registry mirror, Docker Hub's pull-through cache, is 镜像加速器.
    "pull-through 缓存": "镜像加速器",
    "pull-through 代理": "镜像加速器",
    "镜像仓库缓存": "镜像加速器",
    "镜像代理": "镜像加速器",
    "加速服务": "镜像加速器",
    # A line is 版本线, never 线 alone.
    "条线": "版本线",
    "主机端编译器": "主机编译器",  # nvcc's host compiler, which is no 宿主机
    # A profile builds a variant on stand-ins: it is not a kind of stand-in, and it keeps its command's name.
    "替身镜像 profile": "profile",
    "构建配置": "profile",
    "配置档": "profile",
}
# Words no fixed string catches, and the glossary's word for each.
NOT_USED_PATTERNS = {
    # 镜像 alone after a mirror's operator or a package tool: a package mirror (镜像源) written as an image.
    re.compile(r"(?:国内|清华|阿里云|中科大|TUNA|PyPI|pip|apt|conda) ?镜像(?!源|加速器|仓库|服务)"): "镜像源",
    # 主机 for the host; 主机名 (hostname) and nvcc's 主机编译器 are other words.
    re.compile(r"(?<!宿)主机(?!名|编译器)"): "宿主机",
    re.compile(r"替身(?!镜像)"): "替身镜像",
}
QUOTED = re.compile(r"\u201c[^\u201d\n]*\u201d")
INLINE_CODE = re.compile(r"`[^`\n]*`")
GLOSSES = ("替身镜像\uff08stand-in\uff09", "stand-in\uff08替身镜像\uff09")


def wrong_words(text: str) -> list[tuple[str, int, str]]:
    """Each word the pages do not use that `text` holds outside inline code: the word, how often, the
    glossary's word."""
    text = QUOTED.sub("", INLINE_CODE.sub("", text))
    for gloss in GLOSSES:
        text = text.replace(gloss, "")
    found = [(word, text.count(word), ours) for word, ours in NOT_USED.items() if word in text]
    for pattern, ours in NOT_USED_PATTERNS.items():
        matches = pattern.findall(text)
        found += [(word, matches.count(word), ours) for word in sorted(set(matches))]
    return found


@pytest.mark.parametrize("path", CHINESE, ids=lambda path: path.relative_to(REPO_ROOT).as_posix())
def test_the_chinese_pages_use_the_glossarys_words(path: Path) -> None:
    wrong = wrong_words(path.read_text())
    name = path.relative_to(REPO_ROOT).as_posix()
    assert not wrong, f"{name} uses words docs/glossary.zh.md replaces:\n" + "\n".join(
        f"{name}: '{word}' ({count}x): write '{ours}'" for word, count, ours in wrong)


def test_the_glossary_defines_each_word_the_pages_use() -> None:
    glossary = GLOSSARY.read_text()
    missing = sorted({ours for ours in [*NOT_USED.values(), *NOT_USED_PATTERNS.values()] if ours not in glossary})
    assert not missing, f"docs/glossary.zh.md does not define {missing}"


def test_the_check_can_fail() -> None:
    assert wrong_words("每个镜像有两套 CUDA 工具链 发布日换新 torch") == [("工具链", 1, "CUDA 工具包"),
                                                                 ("发布日", 1, "发版日")]
    assert wrong_words("两套 CUDA 工具包 `grep 工具链` 是代码") == []
    assert wrong_words(f"构建 stand-in profile 即{GLOSSES[0]}") == [("stand-in", 1, "替身镜像")]


def test_the_check_catches_a_mirror_written_as_an_image_and_each_retired_variant() -> None:
    # 镜像 alone for a package mirror, beside the image it names in the same sentence.
    assert wrong_words("构建镜像时用清华镜像装 pip 包，也可以换成阿里云镜像") == [  # noqa: RUF001
        ("清华镜像", 1, "镜像源"), ("阿里云镜像", 1, "镜像源")]
    assert wrong_words("构建镜像时用清华镜像源，拉不到 Docker Hub 就用镜像加速器，再推到阿里云容器镜像服务") == []  # noqa: RUF001
    assert wrong_words("换成清华源，或者走 pull-through 缓存") == [("清华源", 1, "镜像源"),  # noqa: RUF001
                                                                 ("pull-through 缓存", 1, "镜像加速器")]
    assert wrong_words("CUDA 12 的最后一条线") == [("条线", 1, "版本线")]
    assert wrong_words("在 ARM 主机上，主机名和主机编译器照常，宿主机也照常") == [("主机", 1, "宿主机")]  # noqa: RUF001
    assert wrong_words("构建替身镜像 profile，再跑一个替身") == [("替身镜像 profile", 1, "profile"),  # noqa: RUF001
                                                                  ("替身", 1, "替身镜像")]
    # A word in Chinese quotes is named, not used: the glossary says which words it does not use.
    assert wrong_words("不写\u201c主机\u201d，也不写\u201c清华源\u201d") == []  # noqa: RUF001
