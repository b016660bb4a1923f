"""Where each variant of the newest line stands with a torch release, decided from the index's and
the registry's answers alone (no file is read or written here):

- current: the variant is on the release;
- waiting: the release has a build for its CUDA, but something it is built from is not out yet
  (the official image, torch's wheel for a platform, NVIDIA's runtime image), so a later run moves it;
- ready: everything it is built from exists, so this run moves it;
- dropped: torch's index has no build of the release for its CUDA; it stays on its torch, and its tag
  stops moving (as cu126 stayed on 2.14.1 when 2.15 left CUDA 12).

A CUDA the release brings (an official image of it, or the build `pip install torch` gives) becomes a
new variant, shaped like the newest line's, and `latest` follows `pip install torch` once its variant
is on the release."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pudev.common.variant import cuda_tag
from pudev.common.versions import release
from pudev.devtools.new_torch.answers import CUDA_REPOSITORY, OFFICIAL_REPOSITORY, Answers, newest_cuda_tag

STATUSES = ("current", "waiting", "ready", "dropped")


@dataclass(frozen=True)
class Decision:
    variant: str
    status: str  # one of STATUSES
    cuda: str
    before: str  # the variant's torch now ("" for a new variant)
    why: str = ""  # what a waiting variant waits for; why one is dropped

    @property
    def line(self) -> str:
        new = " (new)" if not self.before else ""
        on = f" on torch {self.before}" if self.before and self.status != "current" else ""
        return f"{self.variant}{new}: {self.status}{on}" + (f": {self.why}" if self.why else "")


@dataclass(frozen=True)
class Plan:
    """The release's decisions, one per variant of the newest line and per CUDA the release brings."""

    torch: str
    decisions: tuple[Decision, ...]
    latest: str  # the default variant after the move
    latest_before: str

    def named(self, status: str) -> tuple[str, ...]:
        return tuple(d.variant for d in self.decisions if d.status == status)

    @property
    def status(self) -> str:
        """The run's word: ready where anything moves (`latest` too), else waiting where anything waits, else
        current."""
        if self.latest != self.latest_before:
            return "ready"
        return next((word for word in ("ready", "waiting") if self.named(word)), "current")

    @property
    def summary(self) -> str:
        """The first line the workflow reads: the status word, the release, then what happens."""
        moves = [d.variant + (" (new)" if not d.before else "") for d in self.decisions if d.status == "ready"]
        parts = [f"moves {', '.join(moves)}" if moves else "",
                 f"waits for {', '.join(self.named('waiting'))}" if self.named("waiting") else "",
                 f"drops {', '.join(self.named('dropped'))}" if self.named("dropped") else "",
                 f"latest {self.latest_before} → {self.latest}" if self.latest != self.latest_before else ""]
        said = "; ".join(part for part in parts if part) or "every variant of the newest line is on it"
        return f"{self.status} {self.torch}: {said}"


def _variants(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(data.get("variants", {}))


def line_of(data: dict[str, Any], torch: str) -> list[str]:
    """The newest line's variants. Where the newest line is already on `torch`, the variants of the release
    before it count too: a run that moved some of them leaves the rest to a later one."""
    variants = _variants(data)
    torches = sorted({str(table["torch"]) for table in variants.values()}, key=release, reverse=True)
    names = [name for name, table in variants.items() if str(table["torch"]) == torches[0]]
    if torches[0] == torch and len(torches) > 1:
        names += [name for name, table in variants.items() if str(table["torch"]) == torches[1]]
    return names


def platforms_of(data: dict[str, Any], table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """platform -> its facts (`on` table), for each platform the variant is built for."""
    return {platform: dict(table.get("on", {}).get(platform, {}))
            for platform in table.get("platforms", data.get("platforms", ["linux/amd64"]))}


def model_of(data: dict[str, Any], line: Sequence[str]) -> dict[str, Any]:
    """The table a new variant is shaped like: the newest CUDA's of the line."""
    variants = _variants(data)
    return dict(variants[max(line, key=lambda name: release(str(variants[name]["cuda"])))])


def _waits_for(cuda: str, platforms: dict[str, dict[str, Any]], answers: Answers) -> str:
    """What the variant's build on each platform still lacks ("" when nothing)."""
    missing = []
    for platform, facts in platforms.items():
        if (cuda, platform) not in answers.builds:
            missing.append(f"torch {answers.torch}+{cuda_tag(cuda)} for {platform} on torch's index")
        elif facts.get("base") == "wheels":
            flavour = str(facts.get("base_image", "")).rsplit(":", 1)[-1].split("-", 1)[-1]
            if not newest_cuda_tag(answers.cuda_tags, cuda, flavour):
                missing.append(f"{CUDA_REPOSITORY}:{cuda}.*-{flavour}")
        elif cuda not in answers.official:
            missing.append(f"{OFFICIAL_REPOSITORY}:{answers.torch}-cuda{cuda}-cudnn*-runtime")
    return ", ".join(missing)


def decide(data: dict[str, Any], answers: Answers) -> Plan:
    """The plan for the release `answers` describe, from the variant file's data (tomllib's dict)."""
    variants, torch = _variants(data), answers.torch
    line = line_of(data, torch)
    mid_move = {name for name in line if release(str(variants[name]["torch"])) < release(torch)} if any(
        str(variants[name]["torch"]) == torch for name in line) else set()
    decisions = []
    for name in line:
        table, cuda = variants[name], str(variants[name]["cuda"])
        before = str(table["torch"])
        shipped = any(build_cuda == cuda for build_cuda, _ in answers.builds)
        if release(before) >= release(torch):  # on it (or on a newer one than the index names)
            decisions.append(Decision(name, "current", cuda, before))
        elif not shipped and name in mid_move:
            continue  # an older line's variant that the release has no build for: not the newest line's
        elif not shipped:
            decisions.append(Decision(name, "dropped", cuda, before,
                                      f"torch's index has no CUDA {cuda} build of torch {torch}; stays on {before}"))
        else:
            why = _waits_for(cuda, platforms_of(data, table), answers)
            decisions.append(Decision(name, "waiting" if why else "ready", cuda, before, why))
    model = platforms_of(data, model_of(data, line))
    brought = [*answers.official, *([answers.build.cuda] if answers.build.cuda else [])]
    for cuda in sorted(set(brought), key=release):
        if cuda_tag(cuda) not in variants:
            why = _waits_for(cuda, model, answers)
            decisions.append(Decision(cuda_tag(cuda), "waiting" if why else "ready", cuda, "", why))
    latest_before = str(data["default_variant"])
    on_release = {d.variant for d in decisions if d.status in ("ready", "current")}
    wanted = cuda_tag(answers.build.cuda) if answers.build.cuda else ""
    latest = wanted if wanted in on_release else latest_before
    return Plan(torch, tuple(decisions), latest, latest_before)
