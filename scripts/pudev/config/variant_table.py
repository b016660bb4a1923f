"""The matrix as people read it: `pudev variants` in a terminal, and
`pudev variants --markdown` for the README and docs/using/variants.md (a test keeps both copies current)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pudev.common.cuda_drivers import driver_minimum
from pudev.common.generated import markers, replace_block, rewrite_files
from pudev.common.gpu_arch import AMD64_GPUS, ARM_GPUS, arch_name, capability_of, sm_name, torch_oldest
from pudev.common.table import markdown_table, render_table
from pudev.common.variant import as_text, every_contract, travelling_values
from pudev.common.versions import release
from pudev.config.model import Matrix, Variant


def base_text(variant: Variant) -> str:
    """The base as declared: an official image, or one the build makes from torch's wheels (never silent)."""
    if variant.base == "wheels":
        index = variant.torch_index or "the default index"
        return f"{variant.base_image} + torch {variant.torch} wheels from {index}"
    return variant.base_image


def _toolkits_cell(variant: Variant) -> str:
    return " + ".join(f"{t.version}{'*' if t.version == variant.default_toolkit else ''}" for t in variant.toolkits)


# How a column's cell reads where its plain text would say less (the rest: the value as text).
CELLS: dict[str, Callable[[Variant], str]] = {
    "name": lambda variant: variant.name + (" (latest)" if variant.latest else ""),
    "platform": lambda variant: variant.platform.removeprefix("linux/"),
    "base_image": base_text,
    "toolkits": _toolkits_cell,
}
# Each column is declared with its field (pudev.common.variant), in the fields' order.
HEADERS = [contract.column for _, contract in every_contract() if contract.column]


def _row(variant: Variant) -> list[str]:
    return [CELLS[name](variant) if name in CELLS else as_text(value)
            for name, contract, value in travelling_values(variant) if contract.column]


def variants_table(matrix: Matrix) -> str:
    """One row per variant and platform: each platform's build has its own base and arch list."""
    return render_table(HEADERS, [_row(variant) for variant in matrix.every_build()])


def variants_markdown(matrix: Matrix) -> str:
    return markdown_table(HEADERS, [_row(variant) for variant in matrix.every_build()])


def gpu_span(variant: Variant) -> tuple[str, str]:
    """The compute capabilities the variant's torch runs on: from the oldest its CUDA build carries kernels
    for to the newest of the image's arch list (newer GPUs of that major run its code too)."""
    low = torch_oldest(variant.cuda, variant.platform)
    high = max((entry.removesuffix("+PTX") for entry in variant.default.arch_list.split(";")), key=capability_of)
    return low, high


def runs_on(variant: Variant, capability: str) -> bool:
    """Whether the variant's torch runs on a GPU of this compute capability: the tag table's GPU columns
    (and `pudev pick`) say so by this rule alone."""
    low, high = gpu_span(variant)
    return capability_of(low) <= capability_of(capability) and capability_of(capability)[0] <= capability_of(high)[0]


def _gpus(variant: Variant) -> str:
    """The GPU generations the variant's torch runs on (gpu_span), with the cards people know."""
    low, high = gpu_span(variant)
    span = f"{arch_name(low)} to {arch_name(high)}" if arch_name(low) != arch_name(high) else arch_name(low)
    text = f"{span} ({sm_name(low)} to {sm_name(high)})"
    cards = {key: (name,) for key, name in ARM_GPUS.items()} if variant.platform == "linux/arm64" else AMD64_GPUS
    examples = [name for capability, names in cards.items() for name in names if runs_on(variant, capability)]
    # GeForce cards first, as one series ("GeForce RTX 30, RTX 40"), then the data-centre and embedded ones.
    geforce = [name.removeprefix("GeForce ") for name in examples if name.startswith("GeForce ")]
    others = ", ".join(name for name in examples if not name.startswith("GeForce "))
    named = "; ".join(filter(None, ["GeForce " + ", ".join(geforce) if geforce else "", others]))
    return text + (f": {named}" if named else "")


def newest_first(matrix: Matrix) -> list[tuple[str, Variant]]:
    """The variants in the tag table's order: newest torch first, `latest` first among them, then newest CUDA."""
    return sorted(matrix.variants.items(), reverse=True,
                  key=lambda item: (item[1].torch_release, item[1].latest, release(item[1].cuda)))


def tags_markdown(matrix: Matrix) -> str:
    """Which tag for my GPU and driver: one row per variant, newest torch first, `latest` first among them."""
    rows = []
    for name, variant in newest_first(matrix):
        builds = matrix.builds.get(name, {variant.platform: variant})
        amd64, arm64 = builds.get("linux/amd64"), builds.get("linux/arm64")
        tags = f"`{name}`" + (", `latest`" if variant.latest else "")
        rows.append([tags, variant.torch, variant.cuda, driver_minimum(variant.cuda), " + ".join(
            variant.toolkit_versions), _gpus(amd64) if amd64 else "no", _gpus(arm64) if arm64 else "no"])
    headers = ("tag", "torch", "CUDA", "host driver", "toolkits", "amd64 GPUs", "arm64 GPUs")
    return markdown_table(headers, rows)


# The same table for the Chinese pages: its headers, and the few words its cells hold.
HEADERS_ZH = ("标签", "torch", "CUDA", "宿主机驱动", "工具包", "amd64 GPU", "arm64 GPU")
# Chinese punctuation is full-width: the table's cells are Chinese text.
WORDS_ZH = ((" to ", " 至 "), ("full support: ", "完整支持："), (" (", "（"), ("): ", "）："), (")", "）"),  # noqa: RUF001
            ("| no |", "| 不支持 |"), (", ", "、"), ("; ", "；"))  # noqa: RUF001


def tags_markdown_zh(matrix: Matrix) -> str:
    _, rule, *rows = tags_markdown(matrix).splitlines()
    for english, chinese in WORDS_ZH:
        rows = [row.replace(english, chinese) for row in rows]
    return "\n".join([f"| {' | '.join(HEADERS_ZH)} |", rule, *rows])


# The variant table for the Chinese pages: each column's header (every column needs one: a new column
# without its Chinese header fails here, not on the page), and the cells that hold words.
VARIANT_HEADERS_ZH = {"variant": "变体", "platform": "平台", "torch": "torch", "CUDA": "CUDA", "Python": "Python",
                      "base": "基础镜像", "toolkits (* = CUDA_HOME)": "工具包（* 为 CUDA_HOME）",  # noqa: RUF001
                      "arch list (CUDA_HOME)": "架构列表（CUDA_HOME 的）"}  # noqa: RUF001


def base_text_zh(variant: Variant) -> str:
    """base_text in Chinese: the official image, or the one the build makes from torch's wheels."""
    if variant.base == "wheels":
        index = variant.torch_index or "默认索引"
        return f"{variant.base_image} + torch {variant.torch} 的 wheel（取自 {index}）"  # noqa: RUF001
    return variant.base_image


CELLS_ZH: dict[str, Callable[[Variant], str]] = {
    **CELLS,
    "name": lambda variant: variant.name + ("（latest）" if variant.latest else ""),  # noqa: RUF001
    "base_image": base_text_zh,
}


def variants_markdown_zh(matrix: Matrix) -> str:
    """variants_markdown for the Chinese pages: the same rows from the matrix, with Chinese headers and words."""
    rows = [[CELLS_ZH[name](variant) if name in CELLS_ZH else as_text(value)
             for name, contract, value in travelling_values(variant) if contract.column]
            for variant in matrix.every_build()]
    return markdown_table([VARIANT_HEADERS_ZH[header] for header in HEADERS], rows)


MARKERS = markers("variants")
MARKERS_ZH = markers("variants-zh")
TAGS_MARKERS = markers("tags")
TAGS_ZH_MARKERS = markers("tags-zh")


def with_table(readme: str, matrix: Matrix) -> str:
    """A page's text (the README, a docs page) with its generated variant table replaced (unchanged without
    the markers)."""
    return replace_block(readme, MARKERS, variants_markdown(matrix))


def with_tables(text: str, matrix: Matrix) -> str:
    """A page's text with every table the matrix renders (the variants and which tag for my GPU, each in
    English and Chinese) replaced."""
    text = replace_block(with_table(text, matrix), TAGS_MARKERS, tags_markdown(matrix))
    text = replace_block(text, MARKERS_ZH, variants_markdown_zh(matrix))
    return replace_block(text, TAGS_ZH_MARKERS, tags_markdown_zh(matrix))


def pages(root: Path) -> list[Path]:
    """Every page that may hold a generated table: the READMEs (each language's) and docs/."""
    return [*sorted(root.glob("README*.md")), *sorted((root / "docs").rglob("*.md"))]


def refresh_pages(matrix: Matrix, root: Path) -> list[Path]:
    """Render the matrix's tables in every page under `root` that holds them; the pages changed. The
    other generated tables are the maintainers' `make docs`."""
    return rewrite_files(pages(root), lambda text: with_tables(text, matrix))
