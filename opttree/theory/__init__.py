"""Acceptance-rate theory for multi-draft speculative decoding (one decoding step).

One module per idea: `distributions` (input checks, toy pairs), `optimal` (the best lossless
verifier's rate, Hu et al., ICLR 2025), `wor_prefix` and `wor_integral` (that optimum without
replacement at a real vocabulary), `rrs` and `verifiers` (existing verifiers' rates), `table` (every
scheme for k = 1..8), `rows` (those rates on a trace's recorded row). Derivations: docs/theory.md.
"""
