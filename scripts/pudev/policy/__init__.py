"""Supply-chain policy: base and toolkit images pinned by digest in the variant
file (`pudev pin`), and the vulnerability gate's reviewed exceptions
(.trivyignore.yaml)."""
