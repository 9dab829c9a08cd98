"""Reports: text tables and JSON summaries, charts, HTML pages, comparisons and grading."""
