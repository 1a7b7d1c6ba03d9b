"""ragproof's Dagster layer (docs/architecture.md).

``ragproof_assets.EvaluationSuite`` is the Dagster Component that puts a ragproof
evaluation in a team's own project (``component/suite.py``), registered through the
``dagster_dg_cli.registry_modules`` entry point, which names this package. It is
imported on first use: every process that opens a Dagster instance imports
``ragproof_assets.instance`` (the classes a ragproof dagster.yaml names), and with it
this package, which must therefore import nothing else of ragproof's when it loads.
"""

COMPONENT = "EvaluationSuite"


def __getattr__(name: str):
    if name == COMPONENT:
        # Lazy, for the instance's classes above (not to dodge a cycle).
        from ragproof_assets.component.suite import EvaluationSuite

        return EvaluationSuite
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    # dg lists a registry module's objects by dir(); the component is one of them.
    return sorted([*globals(), COMPONENT])
