"""ipywidgets explorers, one module per topic.

Convention (the browser test relies on it): a widget is a container of controls
(sliders, dropdowns, toggle buttons, buttons) plus an ``ipywidgets.Output`` that shows the
result as text or a plot; changing any control changes what the Output shows. Every
explorer takes ``static=True`` to return a plain rendering (printed text or a matplotlib
figure) for GitHub, nbval and readers without a live kernel.
"""
