"""Blind red-team answers: written by a reviewer who read only the learner notebook.

Each ``tests/blind/nbNN.py`` holds ``ANSWERS``, a list of :class:`Answer`. The writer never read the
checker, its tests or ``solutions/``: they wrote what a learner would write from the task text in
``notebooks/NN_*.ipynb``, decided from that text alone whether each answer is right, then ran
``check`` once. ``tests/test_blind_answers.py`` keeps every verdict: a correct answer must get
``[OK]``; a wrong one ``[FAIL]`` with every word of ``words`` in the message (the words name the
writer's own mistake). ``defect`` records what the checker did wrong when the writer ran it; an answer
with a defect is an expected failure until the checker is fixed (then the defect line is deleted).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Answer:
    exercise: str            # "07.param_groups"
    expect: str              # "ok" or "fail", decided from the task text alone
    source: str              # the learner's cell: one or more defs (imports inside are fine)
    label: str = ""          # a style ("list comprehension") or the mistake ("decays biases")
    words: tuple[str, ...] = field(default_factory=tuple)   # for "fail": words the message must contain
    defect: str = ""         # what the checker did wrong, while it still does
    name: str = ""           # the function to pass to check (default: the last def in source)
