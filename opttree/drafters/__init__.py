"""Drafters: the interface, the classic draft LM, the EAGLE-style feature head and the tree temperature."""
