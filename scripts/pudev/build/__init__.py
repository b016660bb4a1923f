"""Stage 2, building: a plan per variant (pure), its labels, CA bundle and lock
checks, the bake and CI exports, and the builder that runs a plan on the engine."""
