"""Stage 3, releasing a built image by digest, one module per command: push (the candidate pushed
once), test (its suite run and each scope's result recorded in the registry beside it), promote
(copied byte for byte once it passed, one image or one index of every platform's), with the tags
read from the image (tags), where images go (targets), what a built or pushed image says of its own
release (image_labels, pushed_image) and the artifacts that refer to a digest (artifacts). What a
release takes (the variant, the repository name, the required tests, `latest`, the platforms) is
read from the candidate itself, its labels and record, never from the checkout's variant file."""
