"""``confirm``: the last line of a measuring cell, stating what the text beside it claims.

A cell that measures something (a time, a memory size, a speed-up) prints numbers that vary from run
to run, so its saved output is not compared by the tests. What must hold on every machine is stated
with ``confirm(condition, claim)``: silent when the run shows the claim, and when it does not, an
error that says which claim this run did not show and what to do about it (instead of a bare
``AssertionError``).

Example:
    >>> confirm(2 < 3, "two is less than three")
    >>> confirm(3 < 2, "three is less than two")
    Traceback (most recent call last):
    ...
    course_utils.claims.ClaimNotShown: This run did not show what the text says: three is less than two. ...
"""

from __future__ import annotations

from course_utils.i18n import t

__all__ = ["ClaimNotShown", "confirm"]


class ClaimNotShown(AssertionError):
    """A measured claim of the lesson that this run did not show."""


def confirm(condition: object, claim: str) -> None:
    """Raise :class:`ClaimNotShown` naming ``claim`` unless ``condition`` is true; otherwise do nothing."""
    if not isinstance(claim, str) or not claim.strip():
        raise TypeError(t("confirm(condition, claim): claim must be a sentence, found {claim}", claim=repr(claim)))
    if not condition:
        raise ClaimNotShown(t(
            "This run did not show what the text says: {claim}. Measurements vary with the machine and "
            "its load: run the cell again; if it keeps failing on a quiet machine, the text is wrong for "
            "your machine (tell the course maintainers which one).", claim=claim))
