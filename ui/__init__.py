"""The Gradio page: one module per tab, each with a `build` function and module-level handlers.

`ui.app` composes the tabs, wires the events that cross tabs and launches the server. Model work
goes through `opttree.serve.service.RunService`; every figure comes from the pure builders in `viz/`.
"""
