"""The in-image compile workshop: compiler cache, parallelism that fits the container, OOM lines."""
