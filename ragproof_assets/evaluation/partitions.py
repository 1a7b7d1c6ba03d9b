"""Each evaluation run is one partition of every ragproof asset.

Dynamic partitions, because runs are created on demand (command line, UI,
schedule), and runs of different datasets and adapters live side by side.
The partition key is the run id, which is also the run's folder in the store.
"""

import dagster as dg

evaluation_runs = dg.DynamicPartitionsDefinition(name="evaluation_runs")
