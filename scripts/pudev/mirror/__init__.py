"""Package mirrors: render apt, pip and conda settings for a mirror, and switch them.

Standard library only: it runs on the host (tests, planning), inside a build
(bind-mounted, before pudev is installed) and inside the image (`pudev mirror`).
"""
