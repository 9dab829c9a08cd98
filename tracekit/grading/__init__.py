"""Grading student runs against reference runs with a rubric (docs/grading.md)."""
