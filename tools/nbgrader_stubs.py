"""nbgrader's ``ClearSolutions`` with the course's own stubs (used by the export's ``nbgrader_config.py``).

``nbgrader generate_assignment`` replaces every ``### BEGIN SOLUTION`` … ``### END SOLUTION`` region
with one stub for the whole course (``ClearSolutions.code_stub``). The lessons give each exercise
its own stub instead, in a ``### BEGIN STUB`` block of comment lines after the solution:
scaffolding such as ``decay, no_decay, seen = [], [], set()``, hints, and a
``raise NotImplementedError("param_groups: your code here")``. :class:`LessonStubs` writes that
stub where the solution was, exactly as ``notebooks/`` shows it (``tools.authoring.learner_source``;
a solution without a stub block gets the course's ``DEFAULT_STUB``, as in ``notebooks/``).

Example:
    >>> from nbformat.v4 import new_code_cell
    >>> cell = new_code_cell('''def f(x):
    ...     ### BEGIN SOLUTION
    ...     return 2 * x
    ...     ### END SOLUTION
    ...     ### BEGIN STUB
    ...     # y = 0  # scaffolding
    ...     # raise NotImplementedError("f: your code here")
    ...     ### END STUB''')
    >>> LessonStubs()._replace_solution_region(cell, "python")
    True
    >>> print(cell.source)
    def f(x):
        y = 0  # scaffolding
        raise NotImplementedError("f: your code here")
"""

from __future__ import annotations

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import ClearSolutions

from tools.authoring import _BEGIN_SOL, learner_source


class LessonStubs(ClearSolutions):
    """``ClearSolutions`` that puts the lesson's ``### BEGIN STUB`` block where each solution was."""

    def _replace_solution_region(self, cell: NotebookNode, language: str) -> bool:
        if cell.cell_type != "code" or not any(_BEGIN_SOL.match(line) for line in cell.source.split("\n")):
            return super()._replace_solution_region(cell, language)
        cell.source = learner_source(cell.source)
        # whatever nbgrader's own markers still find (none in the course's lessons) goes as usual
        super()._replace_solution_region(cell, language)
        return True
