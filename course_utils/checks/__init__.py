"""Exercise checkers, one module per notebook (``nbNN.py`` registers the ``NN.*`` ids).

A notebook with many checkers is a package ``nbNN/`` instead: one module per exercise, and an
``__init__.py`` that imports them all, so importing ``course_utils.checks.nbNN`` registers every id.

Nothing here runs on import of :mod:`course_utils`; :func:`course_utils.exercises.check`
imports the module it needs.
"""
