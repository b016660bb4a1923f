"""Standard-library-only helpers shared by the host and image sides."""
