"""Testing an image: the in-image suite run in a fresh, always-removed container, its
CPU and GPU halves (or the platform proof) tallied from the suite's JUnit report
(suite_run); a candidate's run and the results it proves (candidate_run); a result in the
form it is recorded against the candidate's digest (recorded_results); passes this
machine already ran, by image id (localpasses). Used for a local build (`pudev test
VARIANT`) and, through release/, for a candidate by digest."""
