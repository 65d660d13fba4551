"""Helpers for the interactive PyTorch course.

Importing the package does no work; each notebook imports what it needs, e.g.::

    from course_utils.setup import setup
    from course_utils.exercises import check
"""

__version__ = "0.1.0"
