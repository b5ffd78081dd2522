"""Drafters: the interface, the registry of drafter kinds, the classic draft LM, the EAGLE-style
feature head, early exit, Token Recycling, prompt lookup, retrieval fusion and the tree temperature."""
