"""Training pipeline for the bundled drafts: prompts -> self-distillation data -> head / classic draft."""
