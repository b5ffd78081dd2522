"""Draft trees as pure functions of draft probabilities: the tree, growth, δ rule, OPT-Tree, EAGLE-2, static shapes."""
