"""Each evaluation run is one partition of every ragproof asset.

Dynamic partitions, because runs are created on demand (command line, UI,
schedule), and runs of different datasets and adapters live side by side.
The partition key is the run id, which is also the run's folder in the store.
"""

import dagster as dg

evaluation_runs = dg.DynamicPartitionsDefinition(name="evaluation_runs")


def forget_run_partition(
    instance: dg.DagsterInstance, partitions: dg.DynamicPartitionsDefinition, run_id: str
) -> None:
    """Remove a ragproof run's partition and every Dagster run of it, with their logs
    (``ragproof gc``, a suite's ``keep_last``): the store's run and Dagster's go together.
    Through Dagster's public API only."""
    for run in instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": run_id})):
        instance.delete_run(run.run_id)
        instance.compute_log_manager.delete_logs(prefix=[run.run_id])
    if instance.has_dynamic_partition(partitions.name, run_id):
        instance.delete_dynamic_partition(partitions.name, run_id)
