"""Stage 2, building: plans assembled per variant (pure), their labels, CA bundle and
lock checks, the bake and CI exports; the input images' digests (digests.py) and the
builder that runs a plan on the engine."""
