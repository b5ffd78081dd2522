"""What the target does with a tree: tree attention, verification and acceptance, sampling, the KV
cache, chat prompts. The loop that drives them is in opttree/engine/."""
