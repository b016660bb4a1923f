"""The in-image suite's two halves, as the matrix (`required_tests`), the test runner and the
recorded results name them: the CPU checks, and the GPU checks (the gpu-marked tests)."""

SUITE_HALVES: tuple[str, ...] = ("cpu", "gpu")
