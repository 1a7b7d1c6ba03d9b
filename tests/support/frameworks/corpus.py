"""The four passages every framework test app indexes: (framework id, text, metadata).

Three carry the dataset's source id under ``source_id``; the fourth has none,
so its chunk id falls back to the framework's own document id (``fw-4``).
"""

PASSAGES = (
    ("fw-1", "Paris is the capital of France.", {"source_id": "d1"}),
    ("fw-2", "Bonn was the capital of West Germany until 1990.", {"source_id": "d3"}),
    ("fw-3", "The Danube river flows through Vienna.", {"source_id": "d7"}),
    ("fw-4", "Mars has two small moons.", {}),
)
