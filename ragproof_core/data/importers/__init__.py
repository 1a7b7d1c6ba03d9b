"""Importers: test sets and recorded outputs from other tools' files (CONTRACT section 11).

One module per source format (``beir``, ``trec``, ``ragas``, ``deepeval``);
each reads and validates its whole input into an ``Imported`` before anything
is written, so bad input (``DatasetError``: ``PATH:LINE: reason``) leaves no
output file behind. ``writer`` writes the results, all files or none.
"""
