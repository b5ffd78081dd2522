"""Loading models: the target (bundled GGUF, hub id or local path), draft weights and their cards."""
