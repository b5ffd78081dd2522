"""The engine above the drafters: the speculative loop (draft → build → verify → commit, and the AR
baseline) and this machine's cost model."""
