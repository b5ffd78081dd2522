"""Loading models: the bundled GGUF, hub ids and local paths, draft assets, the allow-list, CPU kernels."""
