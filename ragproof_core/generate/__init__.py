"""Test sets written from a corpus by the judge model (``ragproof generate qa``,
CONTRACT section 13): corpus loading, seeded sampling, near-duplicate checks,
the generate-critique-replace loop, the dry-run estimate and the output file."""
