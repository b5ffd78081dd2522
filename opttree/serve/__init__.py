"""Serving runs to page visitors: the run service, its lane, and the server settings (no Gradio here)."""
