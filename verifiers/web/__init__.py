"""Web views of evaluation runs: a byte-offset index over ``results.jsonl``, summaries, inline
SVG plots and the Jinja2 templates shared by the local viewer (``vf view``) and the hub.

Nothing here imports ``hub_server`` or ``cli``; Jinja2 is imported only when a page is rendered.
"""
