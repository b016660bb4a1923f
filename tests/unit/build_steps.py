"""The image build's step scripts (docker/steps), loaded as modules as the build runs them: beside one another,
so one may import another."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from pudev.paths import REPO_ROOT

STEPS = REPO_ROOT / "docker/steps"


def load_step(file_name: str) -> ModuleType:
    if str(STEPS) not in sys.path:
        sys.path.insert(0, str(STEPS))
    spec = importlib.util.spec_from_file_location(file_name.removesuffix(".py").replace("-", "_"), STEPS / file_name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
