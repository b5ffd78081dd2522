"""Measurement: one method contract, one harness, sweeps, the verify-cost curve, answer files, plots, the report."""
