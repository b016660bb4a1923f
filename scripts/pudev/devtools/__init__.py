"""Tools for developing the images: locks, stand-in images, the build
benchmark, and in-image test runs."""
