from __future__ import annotations

from pudev.building.buildlog import find_failure

LOG = """\
#1 [internal] load build definition from Dockerfile
#1 DONE 0.0s
#8 [final  2/17] RUN --mount=type=tmpfs,target=/tmp python /tmp/protect-torch.py "9.9.9" "12.1"
#8 sha256:abc
#9 [toolkit-a 2/2] RUN sh /tmp/prune-toolkit.sh /usr/local/cuda-11.8
#9 CACHED
#8 1.401 protect-torch: the base holds torch 2.4.1, the variant promises 9.9.9 (override with --set torch=)
#8 ERROR: executor failed running [/bin/bash -o pipefail -c python /tmp/protect-torch.py]: exit code: 1
------
 > [final  2/17] RUN python /tmp/protect-torch.py:
------
error: failed to solve: executor failed running: exit code: 1
"""


def test_failing_step_stage_and_log_tail() -> None:
    failure = find_failure(LOG.splitlines(keepends=True))
    assert failure is not None
    assert failure.stage == "final" and failure.step == "2/17"
    assert failure.log_tail == [
        "protect-torch: the base holds torch 2.4.1, the variant promises 9.9.9 (override with --set torch=)"]
    assert failure.error.endswith("exit code: 1")
    # The command it ran, not the mounts before it.
    assert failure.summary() == ("failed in stage 'final' (step 2/17: "
                                 "RUN python /tmp/protect-torch.py \"9.9.9\" \"12.1\")")


def test_no_failure_in_a_clean_log() -> None:
    assert find_failure(["#1 [final 1/2] FROM x\n", "#1 DONE 0.1s\n"]) is None
