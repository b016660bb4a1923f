"""What every Python in the image does as it starts (pudev.pth imports this module): a writable
HOME for any user id (and one line naming the mount to add when an extension build would find the home
read-only or noexec), the Hugging Face endpoint `pudev mirror --hf` chose, MAX_JOBS that fits the
container, a last line when the OOM killer stopped a build, a one-line refusal of a wheel built for
another torch, and one line instead of pip's report when a package wants another torch than the
image's lock. None of it may stop Python starting, and all of it is cheap: a few small file reads,
no imports beyond the standard library."""

from __future__ import annotations

import os
import sys

from pudev.image import home


def startup() -> None:
    home.startup()
    try:
        from pudev.image import homecheck

        homecheck.install()  # one line before torch's traceback when an extension build has nowhere to go
        from pudev.image.compilers import oom, parallelism
        from pudev.mirror import models

        models.apply(os.environ)
        parallelism.apply(os.environ)
        argv = list(getattr(sys, "argv", []) or [])
        oom.watch(os.environ, argv)
        if "install" in argv:
            from pudev.image.wheels import guard

            if guard.is_pip_install(argv):
                from pudev.image import pip_conflict

                pip_conflict.install(os.environ)
                guard.refuse_foreign_wheels(argv)
    except Exception:  # start-up must go on whatever happens here
        return
