"""Pure view builders: trace (plain JSON) in, Plotly figure / HTML / Markdown out. Never calls a model."""
