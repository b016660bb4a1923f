"""What `pudev build` says when it is interrupted: the truth about the tag, either way."""

from __future__ import annotations

from pudev.building.builder import _interrupted

TAG = "example/dev-image:cu130"


def test_an_interrupt_before_the_image_is_named_moves_no_tag() -> None:
    for replaced, now in ((None, None), ("sha256:" + "a" * 64, "sha256:" + "a" * 64)):
        error = _interrupted(TAG, replaced, now)
        assert (str(error), error.exit_code) == (f"build of {TAG} interrupted: no tag was created or moved", 130)


def test_an_interrupt_after_the_image_is_named_says_the_tag_moved() -> None:
    # BuildKit names the image as its very last step: an interrupt after it leaves a complete image.
    error = _interrupted(TAG, "sha256:" + "a" * 64, "sha256:" + "b" * 64)
    assert str(error) == f"build of {TAG} interrupted after it had finished: {TAG} names the new image ({'b' * 12})"
    assert error.exit_code == 130
    assert "no tag" not in str(_interrupted(TAG, None, "sha256:" + "c" * 64))
