"""Exercise checkers: exactly one module per lesson, ``nbNN.py`` registering the ``NN.*`` ids.

A lesson's module holds all of its exercises in notebook order, each in a section headed
``# --- NN.exercise_id ---``, with the plumbing they share at the top. Importing
``course_utils.checks.nbNN`` registers every ``NN.*`` id; there are no sub-packages and no
re-exports. A long module is fine: add a new exercise to its lesson's module, in notebook order.

Nothing here runs on import of :mod:`course_utils`; :func:`course_utils.exercises.check`
imports the module it needs.
"""
