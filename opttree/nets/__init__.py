"""The networks, at the bottom of the engine: the feature head and the exit head, the few-row CPU
linear, the length predictor, and the conversion of EAGLE checkpoints. Plain torch modules that know
nothing of trees, drafters or the loop."""
