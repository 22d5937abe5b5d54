"""Batch triage of many jobs (see ``analyzer.triage.cli``)."""
