"""The registry transport: one HTTP client for the Docker Registry HTTP API v2 (on
`requests`), the Bearer token flow with per-scope tokens, and credentials resolved
the way docker resolves them. Knows nothing of pudev's images or release rules."""
