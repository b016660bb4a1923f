"""Stage 3, releasing a built image by digest: tags read from the image, the
candidate pushed once, tested, its results recorded in the registry as artifacts
that refer to its digest, and promoted, byte for byte, once it passed. What a
release takes (the variant, the repository name, the required tests, `latest`, the
platforms) is read from the candidate itself, its labels and record, never from
the checkout's variant file."""
