"""Two nodes of two ranks each, as two containers of the built image that share one network namespace
(`--network container:NODE0`): the rendezvous on 127.0.0.1, node 1's own address 127.0.0.2, each node
its --local-addr (they share a host name, and c10d tells nodes apart by name and pid). Every run is the
`pudev dist` line of examples/kubernetes, as the example's uid. A rank or a node that dies, before or
after joining, ends every node with a clear failure within a bound: no hang."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from e2e_support import LocalImage
from multinode_support import Node, example_line

pytestmark = [pytest.mark.engine, pytest.mark.slow]

ADDRESSES = ("127.0.0.1", "127.0.0.2")
JOIN_TIMEOUT = 20  # seconds: node 0 waits this long for node 1, and a lone node fails after it
# Where one node never joins, the other's wait is all the test proves: the same failure, sooner.
LONE_JOIN_TIMEOUT = 6
BOUND = 90  # seconds: after a rank or node dies, every other node has exited by then
RANK_LINE = re.compile(r"rank (\d)/4 is local rank \d on node \d \(127\.0\.0\.\d\), pid (\d+)")
SLOW = " --steps 600 --step-delay 0.1"  # a minute of training, to stop something midway


@contextmanager
def two_nodes(image: LocalImage, lines: tuple[str, str], join_timeout: int = JOIN_TIMEOUT
              ) -> Iterator[tuple[Node, Node]]:
    run = uuid.uuid4().hex[:8]
    env = {"NNODES": "2", "NPROC_PER_NODE": "2", "RDZV_ENDPOINT": f"{ADDRESSES[0]}:29400", "RDZV_ID": run,
           "JOIN_TIMEOUT": str(join_timeout)}
    # Node 0 owns the network namespace: loopback only, and a host name that resolves to 127.0.0.1.
    common = ["--shm-size", "1g", "--user", "4242:0"]  # the uid examples/kubernetes runs as
    first = Node(f"pudev-node0-{run}", image.tag, lines[0], {**env, "NODE_INDEX": "0", "LOCAL_ADDR": ADDRESSES[0]},
                 [*common, "--network", "none", "--hostname", "pudev-node0", "--add-host", "pudev-node0:127.0.0.1"])
    nodes = [first]
    try:
        _wait_running(first)
        nodes.append(Node(f"pudev-node1-{run}", image.tag, lines[1], {**env, "NODE_INDEX": "1",
                                                                      "LOCAL_ADDR": ADDRESSES[1]},
                          [*common, "--network", f"container:{first.name}"]))
        _wait_running(nodes[1])
        yield first, nodes[1]
    finally:
        for node in nodes:
            node.remove()


def _wait_running(node: Node, timeout: float = 120) -> None:
    from pudev.engine import docker

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if docker.run(["inspect", "--format", "{{.State.Running}}", node.name], check=False).stdout.strip() == "true":
            return
        time.sleep(0.2)
    raise AssertionError(f"{node.name} did not start within {timeout} s:\n{node.stderr[-2000:]}")


def _training(nodes: tuple[Node, Node], timeout: float = 120) -> dict[int, tuple[Node, int]]:
    """Wait until rank 0 trains (every node joined) and each rank said where it runs; rank -> (node, pid)."""
    deadline = time.monotonic() + timeout
    ranks: dict[int, tuple[Node, int]] = {}
    while len(ranks) < 4 or "DDP training" not in nodes[0].stderr + nodes[1].stderr:
        assert time.monotonic() < deadline, f"no DDP training within {timeout} s:\n{nodes[0].stderr[-2000:]}"
        assert nodes[0].process.poll() is None and nodes[1].process.poll() is None, nodes[0].stderr[-2000:]
        ranks = {int(rank): (node, int(pid)) for node in nodes for rank, pid in RANK_LINE.findall(node.stderr)}
        time.sleep(0.2)
    return ranks


def test_two_nodes_of_two_ranks_pass(newest_image: LocalImage) -> None:
    line = example_line()
    start = time.monotonic()
    with two_nodes(newest_image, (line, line)) as (first, second):
        codes = (first.wait(300), second.wait(300))
        took = time.monotonic() - start
        print(f"\ntwo-node pudev dist: {took:.1f} s from node 0's start to both nodes' exit\n{first.stdout}")
        assert codes == (0, 0), first.stderr[-3000:] + second.stderr[-3000:]
    for node in (first, second):
        assert "pudev dist: 4 ranks on 2 node(s), gloo, seed 1234" in node.stdout
        assert node.stdout.rstrip().endswith("PASSED")
        for row in ("all_reduce", "all_gather", "broadcast", "ddp loss", "ddp weights", "bus bandwidth"):
            assert re.search(rf"^{re.escape(row)} +ok ", node.stdout, re.MULTILINE), row
        assert "node 0: pudev-node0 (localhost) -> 127.0.0.1" in node.stdout
    assert "local rank 0 on node 0 (127.0.0.1)" in first.stderr + second.stderr
    assert "on node 1 (127.0.0.2)" in first.stderr + second.stderr
    assert took < 240


def test_killing_one_rank_midway_fails_every_rank_clearly(newest_image: LocalImage) -> None:
    line = example_line() + SLOW
    with two_nodes(newest_image, (line, line)) as (first, second):
        node_of_rank_3, pid = _training((first, second))[3]
        time.sleep(5)  # some steps into training
        node_of_rank_3.kill_rank(pid)
        killed_at = time.monotonic()
        codes = (first.wait(BOUND), second.wait(BOUND))
        assert time.monotonic() - killed_at < BOUND
    assert codes == (1, 1)
    both = first.stderr + second.stderr
    assert re.search(rf"pudev dist: error: .*rank 3 \(pid {pid}\).*SIGKILL", both), both[-3000:]
    for rank in (0, 1, 2):  # each other rank says what stopped it
        assert re.search(rf"rank {rank} (on node \d \(127\.0\.0\.\d\): DDP step \d+/600 failed: .*another rank "
                         rf"stopped|was stopped by torchrun)", both), rank
    assert "Traceback" not in both


@pytest.mark.parametrize("late", [0, 1], ids=["node-0-dies", "node-1-dies"])
def test_a_node_that_dies_before_joining_fails_the_other_clearly(newest_image: LocalImage, late: int) -> None:
    line = example_line()
    delayed = f"sleep 600; {line}"  # killed while it sleeps: it never joins
    lines = (delayed, line) if late == 0 else (line, delayed)
    with two_nodes(newest_image, lines, join_timeout=LONE_JOIN_TIMEOUT) as nodes:
        nodes[late].kill()
        other = nodes[1 - late]
        start = time.monotonic()
        code = other.wait(LONE_JOIN_TIMEOUT + BOUND)
        waited = time.monotonic() - start
    assert code == 1
    if late == 1:  # node 0 hosts the rendezvous and waits for node 1 for its join timeout
        assert "not all 2 nodes joined the rendezvous" in other.stderr and "(--join-timeout)" in other.stderr
    else:
        assert "could not reach the rendezvous" in other.stderr and "--node-index 0 hosts it" in other.stderr
    assert waited < LONE_JOIN_TIMEOUT + BOUND and "Traceback" not in other.stderr


@pytest.mark.parametrize("dies", [0, 1], ids=["node-0-dies", "node-1-dies"])
def test_a_node_that_dies_after_joining_fails_the_other_clearly(newest_image: LocalImage, dies: int) -> None:
    line = example_line() + SLOW
    with two_nodes(newest_image, (line, line)) as nodes:
        _training(nodes)
        time.sleep(5)  # some steps into training
        nodes[dies].kill()
        killed_at = time.monotonic()
        survivor = nodes[1 - dies]
        code = survivor.wait(BOUND)
        assert time.monotonic() - killed_at < BOUND
    assert code == 1
    assert "pudev dist: error: " in survivor.stderr
    assert re.search(r"another rank stopped, or its node went away|the node that hosts it \(--node-index 0\) "
                     r"stopped", survivor.stderr), survivor.stderr[-3000:]
    assert "Traceback" not in survivor.stderr
