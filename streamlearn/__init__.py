"""streamlearn: a Vowpal-Wabbit-style streaming learner for sparse online learning with L1 sparsity."""

__version__ = "0.1.0"
