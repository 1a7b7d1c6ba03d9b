"""The evaluation: assets, IO managers, resources, partitions, job and executor."""
