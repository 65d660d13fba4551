"""Plots for the course, one small module per topic (matplotlib only; no system graphviz).

Import the function you need from its module, e.g.
``from course_utils.viz.shapes import draw_broadcast``.
"""
