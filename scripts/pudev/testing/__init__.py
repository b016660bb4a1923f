"""Testing an image: the in-image suite run in a fresh, always-removed container,
its CPU and GPU halves tallied from the suite's JUnit report. Used for a local
build (`pudev test VARIANT`) and for a candidate by digest (release/)."""
