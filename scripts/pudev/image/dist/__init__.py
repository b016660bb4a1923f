"""`pudev dist`: the distributed check. torchrun (c10d rendezvous) starts N ranks on each of M nodes;
every rank checks exact collectives, trains a short seeded DDP loop and times an all_reduce sweep, and
each node prints the gathered table (or JSON). Pure parts (sizes, NCCL log, judgement, report) need no
torch, so tests/unit runs them on recorded data."""
