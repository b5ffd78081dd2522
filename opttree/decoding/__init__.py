"""The speculative loop: verification and acceptance, sampling, KV cache, tree attention, chat prompts."""
