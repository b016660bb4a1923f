"""Testing an image: the in-image suite run in a fresh, always-removed container, its CPU and
GPU scopes (or the platform scope) tallied from the suite's JUnit report (suite_run), and the
passes this machine already ran, by image id (localpasses). Used for a local build (`pudev test
VARIANT`) and, through release/test.py, for a candidate by digest."""
