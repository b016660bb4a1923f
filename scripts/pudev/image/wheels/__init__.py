"""The wheelhouse: extensions compiled once per image, marked with what they were built against."""
