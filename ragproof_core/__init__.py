"""ragproof_core: the plain-Python heart of ragproof.

Data model, dataset loading, adapters, metrics, judge and store. Nothing in this
package imports Dagster; ``ragproof_assets`` is the thin Dagster layer on top.
"""

__version__ = "0.1.0"
