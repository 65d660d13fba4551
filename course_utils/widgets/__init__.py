"""ipywidgets explorers, one module per topic.

Convention (the browser test relies on it): an explorer is a
:class:`course_utils.widgets.base.Explorer`: a container of controls (sliders, dropdowns,
toggle buttons, buttons) plus an ``ipywidgets.Output`` that shows a readout line and a picture;
changing any control changes what the Output shows. Callbacks never use pyplot (they may run on
a kernel subshell while a cell plots): they draw on ``matplotlib.figure.Figure`` objects and
replace the Output's contents in one assignment. The first picture is drawn on construction;
values are shown exactly as given (selection sliders hold the caller's own numbers). Every
explorer takes ``static=True`` to return a plain rendering (printed text or a matplotlib
figure) for GitHub, nbval and readers without a live kernel; its plain-text form says it is
interactive and repeats the readout it starts with.
"""
