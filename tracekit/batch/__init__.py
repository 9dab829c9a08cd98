"""Many traces or submissions at once: the orchestration (a report per trace, grading runs) and the
executors that run their tasks (killable local worker processes, dask.distributed)."""
