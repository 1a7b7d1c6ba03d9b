"""What the user sees: the run summary, the per-run HTML report (CONTRACT
section 10), the compare Markdown and the judge activity tables.

``summary`` renders a run's summary for the terminal, Dagster and JSON;
``report_data`` gathers one run (and optionally a baseline) from the store into
a plain JSON-ready dict; ``html`` renders that dict into one self-contained
page; ``markdown`` holds the small Markdown views Dagster shows. No module here
imports Dagster.
"""
