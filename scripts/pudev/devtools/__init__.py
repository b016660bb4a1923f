"""Tools for developing the images: locks, stand-in images and the build
benchmark. Only cli/ imports them."""
