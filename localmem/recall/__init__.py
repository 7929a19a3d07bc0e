"""Recall: parameters, candidate channels, scoring, filtering and the pipeline."""
