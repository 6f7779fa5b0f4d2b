"""Ticket-ready redaction (`--redact`): values from the user's data, code and environment become
stable pseudonyms in every format (docs/redaction.md).

One `Redactor` is made per analysis (`redactor_for`): it first reads the application in a fixed
order (`policy`), so that tokens are numbered by first sight in the log and agree between the
formats of one analysis; then `redact_report` walks every string of a report's view models (or
`mark_document` of its JSON document) just before rendering. The passes, each in its module:
`secrets` (passwords, tokens and keys in free text: `*********(redacted)`), `environment`
(paths, URLs, hosts, users), `plan_text` (literals found by Spark's plan syntax), `free_text`
(quoted strings and numbers of descriptions and messages, and where our text quotes them),
`pseudonyms` (the tokens), `spans` (how passes claim parts of one string).
"""

from analyzer.redact.policy import REDACTION_NOTE, learn_analysis, redactor_for
from analyzer.redact.pseudonyms import TOKEN_KINDS, Pseudonyms, TokenKind
from analyzer.redact.redactor import Redactor
from analyzer.redact.secrets import scrub_secrets
from analyzer.redact.views import mark_document, redact_report, redact_view

__all__ = [
    "REDACTION_NOTE",
    "TOKEN_KINDS",
    "Pseudonyms",
    "Redactor",
    "TokenKind",
    "learn_analysis",
    "mark_document",
    "redact_report",
    "redact_view",
    "redactor_for",
    "scrub_secrets",
]
