"""Stage 1, configuration: the variant matrix (model), reading and checking it
(loader, schema, rules), per-run overrides, stand-in profiles, and the
selection a command works on. Pure: no Docker, no network."""
