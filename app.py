"""Placeholder until the full app lands: a minimal page that runs one OPT-Tree decode."""

import os

import gradio as gr


def _generate(prompt: str) -> str:
    from opttree.config import DecodeConfig
    from opttree.errors import OptTreeError
    from opttree.loading import load_pair
    from opttree.speculative import run

    try:
        trace = run(load_pair(), prompt, DecodeConfig(max_new_tokens=64))
    except OptTreeError as exc:
        return f"Error: {exc}"
    s = trace["summary"]
    return f"{trace['output_text']}\n\n(τ = {s['tau']:.2f}, {s['tokens_per_s']:.1f} tokens/s)"


with gr.Blocks(title="OPT-Tree Explorer") as demo:
    box = gr.Textbox(label="Prompt", value="Explain photosynthesis.")
    out = gr.Textbox(label="Output")
    gr.Button("Run").click(_generate, box, out)

if __name__ == "__main__":
    demo.launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
