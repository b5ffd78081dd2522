"""OPT-Tree Explorer engine: real tree-based speculative decoding with step traces.

Data flows one way: models -> drafter -> tree builder -> verifier -> step trace.
"""

__version__ = "0.1.0"
