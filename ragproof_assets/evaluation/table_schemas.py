"""The column schemas the Dagster UI shows for the stored tables, built from the store's
table declarations (``ragproof_core.store.tables``) so they cannot drift from the files."""

import dagster as dg
import pyarrow as pa

from ragproof_core.store import CASE_RESULTS, DATASET, METRIC_SUMMARIES, OUTPUTS, Table


def column_type(arrow: pa.DataType) -> str:
    """The type as the UI shows it: SQL-like names for scalars, Arrow's own text otherwise."""
    if pa.types.is_string(arrow):
        return "string"
    if pa.types.is_int64(arrow):
        return "int"
    if pa.types.is_float64(arrow):
        return "double"
    return str(arrow)


def column_schema(table: Table) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                c.name,
                column_type(c.type),
                description=c.description,
                constraints=dg.TableColumnConstraints(nullable=c.nullable),
            )
            for c in table.columns
        ]
    )


DATASET_COLUMNS = column_schema(DATASET)
OUTPUTS_COLUMNS = column_schema(OUTPUTS)
CASE_RESULTS_COLUMNS = column_schema(CASE_RESULTS)
METRIC_SUMMARIES_COLUMNS = column_schema(METRIC_SUMMARIES)
