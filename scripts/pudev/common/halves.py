"""The in-image suite's two halves, as the matrix (`required_tests`), the test runner and the
recorded results name them: the CPU checks, and the GPU checks (the gpu-marked tests).

One more scope may be run and required: the platform scope, the CPU checks marked `platform`
(tests/image), which prove an image on its platform at a fraction of the CPU half's cost. It is
what a build under emulation runs; a passed CPU half holds every one of its tests."""

SUITE_HALVES: tuple[str, ...] = ("cpu", "gpu")
PLATFORM_SCOPE = "platform"
SUITE_SCOPES: tuple[str, ...] = (*SUITE_HALVES, PLATFORM_SCOPE)  # what `required_tests` may name


def covering(scope: str) -> tuple[str, ...]:
    """The recorded scopes whose pass proves `scope`: itself, and the CPU half for the platform scope."""
    return (PLATFORM_SCOPE, "cpu") if scope == PLATFORM_SCOPE else (scope,)
