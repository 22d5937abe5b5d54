"""The tool's own reports, recognised by their first lines so that discovery never reads one
as a log (a report written next to the logs would otherwise bring its evidence lines back as
a second failure, at ``report.txt:21``).

Each form ``mcore-diagnose`` writes has a first line no log starts with: the terminal and
text report's box title, the Markdown report's heading, the JSON object's first keys, the
one-line ``--quiet`` form, the event table's header (text, CSV, JSON), lint's summary line
and JSON, triage's summaries and tables. ``tests/test_issue42_outputs.py`` writes each form
and checks that discovery skips it.
"""

from __future__ import annotations

import regex

REASON = "an mcore-diagnose report"
"""Why discovery skips such a file (shown by ``--verbose``)."""

_FIRST = regex.compile(
    r"""^(?:
      [╭+][─-]\ mcore-diagnose\b                                  # terminal / text report
    | \#\ mcore-diagnose:\                                         # Markdown report
    | \{"schema_version":\ \d+,\ "job":\                           # JSON (Lines) report
    | (?:.*:\ )?[a-z_]+\ rank=\S+\ node=\S+\ confidence=[\d.]+:\   # --quiet line
    | \|\ (?:job\ +\|\ )?(?:time|rank)\ +\|\ .*\|$                 # event table, text
    | (?:job,)?(?:file,line,offset|rank,node,local_rank),          # event table, CSV
    | \[\{"(?:job|file|rank)":                                     # event table, JSON
    | \d+\ scripts?:\                                              # lint, text
    | Triage:\ \d+\ jobs?\b | \#\ Triage\ summary$                 # triage summary
    | job_id,path,status,                                          # triage table, CSV
    | <!DOCTYPE\ html>.*?(?:mcore-diagnose)                        # HTML report
    )""",
    regex.X | regex.S,
)
_OPENING = regex.compile(
    r'^(?:\{\s*"findings":|\[\s*\{\s*"job_id":'  # lint's JSON, triage's JSON table
    r"|(?P<rule>={20,100})\r?\nJob .*\r?\n(?P=rule)\r?$"  # text report, several jobs
    r"|\*\*Job .*\*\*\r?\n\r?\n\# mcore-diagnose: )",  # Markdown report, several jobs
    regex.M,
)
"""The forms whose first line alone is not enough: their opening lines."""


def is_own_report(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a report ``mcore-diagnose`` wrote."""
    text = head.decode("utf-8", "replace").lstrip("\ufeff\r\n\t ")
    if _OPENING.match(text):
        return True
    first = text.split("\n", 1)[0].rstrip("\r")
    if first.startswith("<!DOCTYPE html>"):
        first = text
    return _FIRST.match(first) is not None
