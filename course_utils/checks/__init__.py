"""Exercise checkers, one module per notebook (``nbNN.py`` registers the ``NN.*`` ids).

Nothing here runs on import of :mod:`course_utils`; :func:`course_utils.exercises.check`
imports the module it needs.
"""
