"""`pudev bench`: the training-speed optimisation ladder (data, models, rungs, report)."""
