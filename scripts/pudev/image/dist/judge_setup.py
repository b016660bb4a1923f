"""The verdicts on each node's setup: /dev/shm, NCCL's version, the transport NCCL or gloo chose, and
whether host names resolve. Every problem comes with its fix."""

from __future__ import annotations

from typing import Any

from pudev.image.verify import Check

MIB = 1024**2
SHM_FAIL, SHM_WARN = 256 * MIB, 1024 * MIB
SHM_FIX = ("give the container more shared memory: docker run --shm-size=8g (or --ipc=host); Kubernetes: an "
           "emptyDir with medium: Memory at /dev/shm (examples/kubernetes); pyxis: "
           "--container-mounts=/dev/shm:/dev/shm")
IB_FIX = ("check that NCCL_IB_DISABLE is unset, that the image has libibverbs (rdma-core), and that the container "
          "gets the devices and may lock memory: docker run --device /dev/infiniband --cap-add IPC_LOCK "
          "--ulimit memlock=-1; Kubernetes: request your RDMA device plugin's resource")
NO_IB_FIX = ("on InfiniBand or RoCE clusters pass the devices in (docker --device /dev/infiniband, the Kubernetes "
             "RDMA device plugin); on Ethernet-only clusters this is expected: set NCCL_SOCKET_IFNAME to the "
             "fastest interface")
NAME_FIX = ("make each node's host name resolve to an address the others reach (docker run --hostname N "
            "--add-host N:IP; Kubernetes: hostname and subdomain with a headless Service): torch before 2.5 hands "
            "rank 0's host name to every rank as MASTER_ADDR, and gloo binds to the address the name resolves to")


def by_node(ranks: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The lowest rank of each node, which speaks for the node's facts."""
    nodes: dict[int, dict[str, Any]] = {}
    for report in sorted(ranks, key=lambda r: r["rank"]):
        nodes.setdefault(report["node"], report)
    return dict(sorted(nodes.items()))


def _shm(result: dict[str, Any], nodes: dict[int, dict[str, Any]]) -> Check:
    sizes = {node: r["facts"]["shm_bytes"] for node, r in nodes.items()}
    detail = ", ".join(f"node {node}: {size // MIB} MiB" for node, size in sizes.items())
    smallest = min(sizes.values())
    # NCCL keeps its intra-node buffers in /dev/shm; gloo does not, but DataLoader workers do.
    nccl = result["backend"] == "nccl" and result["nproc_per_node"] > 1
    if smallest < SHM_FAIL:
        return Check("/dev/shm", "fail" if nccl else "warn", f"{detail}: too small for NCCL and DataLoader workers",
                     SHM_FIX)
    if smallest < SHM_WARN:
        return Check("/dev/shm", "warn", f"{detail}: large batches or many ranks may not fit", SHM_FIX)
    return Check("/dev/shm", "ok", detail)


def _nccl_version(result: dict[str, Any]) -> Check:
    built = result["ranks"][0]["torch_nccl"]
    if result["backend"] == "gloo":
        return Check("nccl", "skip" if not built else "ok",
                     f"torch's NCCL {built} (not used: gloo on CPU)" if built else "torch has no NCCL here")
    loaded = {r["nccl"]["version"] for r in result["ranks"] if r["nccl"] and r["nccl"]["version"]}
    other = sorted(version for version in loaded if not version.startswith(built + "+") and version != built)
    if other:
        return Check("nccl", "warn", f"NCCL {', '.join(other)} was loaded; torch was built with {built}",
                     "another libnccl comes first (LD_PRELOAD or LD_LIBRARY_PATH): remove it, or keep it on purpose")
    return Check("nccl", "ok", f"NCCL {built}" + (f" (loaded {loaded.pop()})" if loaded else ""))


def _settings(nodes: dict[int, dict[str, Any]]) -> str:
    env = {f"{key}={value}" for r in nodes.values() for key, value in r["facts"]["env"].items()}
    return f"; set: {' '.join(sorted(env))}" if env else ""


def _transport(result: dict[str, Any], nodes: dict[int, dict[str, Any]]) -> Check:
    if result["backend"] == "gloo":
        return Check("transport", "ok", "gloo over TCP, on the address each host name resolves to (loopback when "
                                        "none)" + _settings(nodes))
    choices = [r["nccl"] for r in result["ranks"] if r["nccl"] and (r["nccl"]["network"] or r["nccl"]["paths"])]
    if not choices:
        return Check("transport", "warn", "NCCL printed no INFO lines, so its choice is unknown" + _settings(nodes),
                     "unset NCCL_DEBUG and NCCL_DEBUG_FILE: pudev dist sets them to read NCCL's choice")
    network = "/".join(sorted({c["network"] for c in choices if c["network"]})) or "none"
    paths = sorted({path for c in choices for path in c["paths"]})
    devices = next((c["devices"] for c in choices if c["devices"]), "")
    detail = (f"network {network}" + (f" ({devices})" if devices else "") + f"; channels via {', '.join(paths)}"
              + (", GPUDirect RDMA" if any(c["gdrdma"] for c in choices) else "") + _settings(nodes))
    if result["nnodes"] > 1 and not any(path == "NET/IB" for path in paths):
        if any(r["facts"]["ib_devices"] for r in nodes.values()):
            return Check("transport", "warn", f"{detail}: InfiniBand devices are present, NCCL uses sockets", IB_FIX)
        return Check("transport", "warn", f"{detail}: between nodes NCCL uses TCP sockets", NO_IB_FIX)
    if result["nproc_per_node"] > 1 and paths and not any(path.startswith(("P2P", "NVLS")) for path in paths):
        return Check("transport", "warn", f"{detail}: GPUs on a node exchange data through host memory",
                     "check `nvidia-smi topo -m`, unset NCCL_P2P_DISABLE; in a VM peer-to-peer needs ACS off")
    return Check("transport", "ok", detail)


def _name(facts: dict[str, Any]) -> str:
    host, fqdn = facts["host"], facts["fqdn"]
    return host if fqdn == host else f"{host} ({fqdn})"


def _names(nodes: dict[int, dict[str, Any]]) -> Check:
    parts = [f"node {node}: {_name(r['facts'])} -> {', '.join(r['facts']['resolves_to']) or 'nothing'}"
             for node, r in nodes.items()]
    if all(r["facts"]["resolves_to"] for r in nodes.values()):
        return Check("host names", "ok", "; ".join(parts))
    return Check("host names", "warn", "; ".join(parts), NAME_FIX)


def setup_checks(result: dict[str, Any]) -> list[Check]:
    nodes = by_node(result["ranks"])
    return [_shm(result, nodes), _nccl_version(result), _transport(result, nodes), _names(nodes)]
