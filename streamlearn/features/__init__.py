"""The features of an example: VW's hashing of names (``hashing``), the feature-expansion options
(``expansion``: interactions, n-grams, ignore/keep/redefine), and the plain-Python pipeline with names
behind ``--invert_hash`` and ``--audit`` (``names``, ``audit``). The compiled expansion of a parsed block
is ``streamlearn.io.expand``."""
