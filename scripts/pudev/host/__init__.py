"""The host a user runs images on, read before the first pull: its GPUs and driver (gpus.py), the tag the
matrix says fits them (fit.py), what would break a first `docker run --gpus` (first_run.py), and `pudev pick`,
which says all of it (pick.py)."""
