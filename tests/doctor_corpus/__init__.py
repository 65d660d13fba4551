"""Real bugs from public issue and pull-request threads, reduced to small CPU programs for the
training doctor (see :mod:`.cases`)."""

from .cases import CASES, Case

__all__ = ["CASES", "Case"]
