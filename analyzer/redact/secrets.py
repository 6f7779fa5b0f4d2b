"""Secret shapes in free text: passwords, tokens and keys a log carries outside configuration.

Spark redacts configuration values whose key names a secret (`model.config_secrets`), but an
application name, a SQL or job description, a job group or a plan can hold one too: a JDBC URL
with `?password=…`, `Authorization: Bearer …` in a description, a `ghp_…` token in a job group.
Each shape below is found on the original string and its secret part replaced by Spark's
`*********(redacted)`, the words around it kept:

- a pair whose key names a secret (`password`, `passwd`, `pwd`, `secret`, `token`,
  `credential`, `auth`, `signature`, and `key` after `access`, `secret`, `api`, `private`,
  `account` and the like, Spark's `spark.redaction.regex` words): `key=value`, `key = value`,
  `key: value`, `key -> value` (Scala's maps), `"key": "value"` (JSON), `--password value`
  (a command line); a key that is only `key` counts only as `key=value`, so that
  `GROUP BY key`, `keys=[…]`, `{"key":"Vendor"}` and `Spread the hot key: …` stay;
- the password of a URL's user-info (`jdbc:postgresql://etl:…@db/x`, Oracle's `thin:etl/…@`);
- `Authorization:` headers, `Bearer …` and `Basic …` credentials;
- tokens known by their shape: JWTs, Stripe (`sk_live_…`), GitHub (`ghp_…`, `github_pat_…`),
  GitLab (`glpat-…`), Slack (`xoxb-…`), Google API keys (`AIza…`), AWS access key ids
  (`AKIA…`, `ASIA…`), PEM private key blocks;
- a long base64 or hexadecimal run (16 characters or more, letters and digits) just after a
  secret word (`secret wJalrXUtnFEMI/K7MDENG…`).

What is not caught is listed in docs/redaction.md. Every pattern is bounded, so a hostile string
costs linear time.
"""

from __future__ import annotations

import base64
import binascii
import re

from analyzer.model.config_secrets import REDACTED
from analyzer.redact.spans import Spans

SECRET_WORDS = frozenset(
    {"password", "passwd", "pwd", "passphrase", "secret", "secrets", "token", "credential",
     "credentials", "auth", "authorization", "apikey", "accesskey", "secretkey", "privatekey",
     "sig", "signature", "sessiontoken", "accesstoken", "refreshtoken", "clientsecret"}
)  # fmt: skip
"""Parts of a key that make it name a secret, wherever they stand in it (`db.password`)."""
KEY_QUALIFIERS = frozenset(
    {"access", "secret", "private", "api", "account", "master", "encryption", "signing",
     "shared", "client", "storage", "sas", "ssh", "app", "auth", "consumer", "subscription"}
)  # fmt: skip
"""Parts that make a following `key` part name a secret (`access.key`, `apiKey`)."""

_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_WORD = re.compile(r"pass|pwd|secret|token|credential|auth|sig|key")
"""A part of every key `names_secret` accepts (lower case): where a key-value pair may begin."""
_WORD_ANY_CASE = re.compile(_WORD.pattern, re.IGNORECASE)
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_MAX_KEY_CHARS = 100
_VALUE_END = r"\s&;,'\"()\[\]{}<>|`"
_VALUE = (
    rf"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]{{1,500}})(?P=quote)"
    rf"|(?P<bare>[^{_VALUE_END}]{{1,500}}))"
)
_AFTER_KEY = re.compile(rf"(?P<sep>=|[ \t]+=[ \t]*|[ \t]*->[ \t]*|:[ \t]+){_VALUE}")
"""What binds a value to a key: `=`, ` = `, ` -> ` (Scala's maps), `: ` (headers, YAML)."""
_AFTER_QUOTED_KEY = re.compile(rf"(?P<sep>[ \t]*[:=][ \t]*|[ \t]*->[ \t]*){_VALUE}")
"""After a quoted key (`"password": "…"`, JSON), a colon needs no space."""
_AFTER_FLAG = re.compile(rf"[ \t]+(?P<bare>[^\s\-{_VALUE_END}][^{_VALUE_END}]{{0,499}})")
"""A command line's `--password VALUE`."""
_RUN = re.compile(r"[\s:=,\"'>]{1,3}(?P<secret>[A-Za-z0-9+/_-]{16,2000}={0,2})(?![\w+/=-])")
"""A long base64 or hexadecimal run just after a secret word (`secret wJalrXUtnFEMI/K7…`)."""
_MAX_RUN_KEY_PARTS = 3
"""A word before such a run is a few parts long (`secret`, `aws_secret_key`), not a file name
that happens to hold one (`kafka-0-10-token-provider_resources.jar:/databricks/…`)."""
_USER_INFO = re.compile(r"://[^/\s:@?#'\"]{1,200}:(?P<secret>[^/\s@?#'\"]{1,500})@")
_ORACLE_THIN = re.compile(r":thin:[^/\s:@'\"]{1,200}/(?P<secret>[^\s@'\"]{1,500})@")
_AUTHORIZATION = re.compile(
    r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?:bearer|basic|digest|token|negotiate|ntlm|aws4-hmac-sha256)[ \t]+)?"
    r"(?P<secret>[^\s\"',;]{1,2000})"
)
_AUTH_SCHEMES = frozenset(
    {"bearer", "basic", "digest", "token", "negotiate", "ntlm", "aws4-hmac-sha256"}
)
_SCHEME_CREDENTIAL = re.compile(
    r"(?i)\b(?P<scheme>bearer|basic)[ \t]+(?P<secret>[A-Za-z0-9\-._~+/]{8,2000}=*)"
)
_TOKEN_SHAPES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("eyJ",),
        re.compile(r"\beyJ[A-Za-z0-9_-]{4,2000}\.[A-Za-z0-9_-]{4,4000}\.[A-Za-z0-9_-]{0,2000}"),
    ),
    (("sk_", "rk_"), re.compile(r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{8,200}")),  # Stripe
    (("whsec_",), re.compile(r"\bwhsec_[0-9A-Za-z]{16,200}")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,255}")),
    (("github_pat_",), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,255}")),
    (("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,255}")),  # GitLab
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,255}")),  # Slack
    (("AIza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),  # Google API key
    (
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),  # AWS access key ids
        re.compile(
            r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])"
        ),
    ),
    (
        ("PRIVATE KEY-----",),
        re.compile(
            r"-----BEGIN [A-Z ]{0,20}PRIVATE KEY-----[\s\S]{0,20000}?"
            r"(?:-----END [A-Z ]{0,20}PRIVATE KEY-----|$)"
        ),
    ),
)
"""Tokens known by their shape, each with the text its shape must hold (a cheap first look)."""


def names_secret(key: str, strict: bool = True) -> bool:
    """Tell whether a key names a secret; with `strict` False, a key ending in a bare `key`
    part (`key`, `cache.key`) counts too.

    >>> [names_secret(k) for k in ("spark.ssl.keyPassword", "fs.s3a.access.key", "apiKey")]
    [True, True, True]
    >>> [names_secret(k) for k in ("keys", "author", "key", "monkey", "key.serializer")]
    [False, False, False, False, False]
    >>> names_secret("key", strict=False), names_secret("partition.key", strict=False)
    (True, True)
    """
    parts = [p.lower() for p in _PARTS.findall(key)]
    for i, part in enumerate(parts):
        if part in SECRET_WORDS:
            return True
        if part == "key" and i > 0 and parts[i - 1] in KEY_QUALIFIERS:
            return True
    return not strict and bool(parts) and parts[-1] == "key"


def claim_secrets(spans: Spans) -> None:
    """Claim every secret of `spans.text`, to be replaced by `*********(redacted)`.

    Each pattern runs only when the text holds the words it needs: most strings of a report
    hold none.
    """
    text = spans.text
    lower = text.lower()
    for markers, regex in _TOKEN_SHAPES:
        if any(marker in text for marker in markers):
            for m in regex.finditer(text):
                _claim(spans, m.start(), m.end())
    if "authorization" in lower:
        for m in _AUTHORIZATION.finditer(text):
            _claim(spans, m.start("secret"), m.end("secret"))
    if "://" in text:
        for m in _USER_INFO.finditer(text):
            _claim(spans, m.start("secret"), m.end("secret"))
    if ":thin:" in text:
        for m in _ORACLE_THIN.finditer(text):
            _claim(spans, m.start("secret"), m.end("secret"))
    if "bearer" in lower or "basic" in lower:
        for m in _SCHEME_CREDENTIAL.finditer(text):
            if _is_credential(m.group("scheme"), m.group("secret")):
                _claim(spans, m.start("secret"), m.end("secret"))
    # The key words are looked for in the lowered text (a case-blind pattern is much slower),
    # unless lowering changed the length (`İ`), which would move the positions.
    _claim_pairs(spans, lower if len(lower) == len(text) else "")


def _claim_pairs(spans: Spans, lower: str) -> None:
    """Claim the values bound to keys that name a secret, and long runs after secret words."""
    text = spans.text
    n = len(text)
    done = 0
    words = _WORD.finditer(lower) if lower else _WORD_ANY_CASE.finditer(text)
    for word in words:
        if word.start() < done:
            continue  # a second secret word of a key already read (`secret.token`)
        start = word.start()
        while start > 0 and word.start() - start < _MAX_KEY_CHARS and text[start - 1] in _KEY_CHARS:
            start -= 1
        end = word.end()
        while end < n and end - word.end() < _MAX_KEY_CHARS and text[end] in _KEY_CHARS:
            end += 1
        done = end
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
            continue  # a key longer than we look at
        if end < n and text[end] in _KEY_CHARS:
            continue  # the same, at its end (a jar's long file name)
        while start < word.start() and text[start] in ".-":
            start += 1  # `--password`: the key is `password`
        while end > word.end() and text[end - 1] in ".-":
            end -= 1  # `password.` ends a sentence
        key = text[start:end]
        if not (key[0].isalpha() or key[0] == "_"):
            continue
        opened = text[start - 1] if start > 0 else ""
        pair: re.Match[str] | None
        loose = False
        if opened in ("'", '"') and text[end : end + 1] == opened:
            pair = _AFTER_QUOTED_KEY.match(text, end + 1)
        else:
            pair = _AFTER_KEY.match(text, end)
            # A bare `key` names a secret only as `key=value` (`?key=AIza…` in a URL), not as a
            # column (`GROUP BY key`, `key = 1`), a tag list's field (`{"key":"Vendor"}`), a
            # map's entry (`key -> v`) or our own words (`hot key: spread it`).
            loose = pair is not None and pair.group("sep") == "="
        if pair is not None and (pair.group("bare") or "").lower() in _AUTH_SCHEMES:
            continue  # `Authorization: Bearer …`: the header's rule took the credential
        if pair is not None and names_secret(key, strict=not loose):
            group = "quoted" if pair.group("quoted") is not None else "bare"
            _claim(spans, pair.start(group), pair.end(group))
            continue
        if text[max(0, start - 2) : start] == "--" and names_secret(key):
            flag = _AFTER_FLAG.match(text, end)
            if flag is not None:
                _claim(spans, flag.start("bare"), flag.end("bare"))
                continue
        if names_secret(key, strict=False) and len(_PARTS.findall(key)) <= _MAX_RUN_KEY_PARTS:
            run = _RUN.match(text, end)
            if run is not None and _mixed(run.group("secret")):
                _claim(spans, run.start("secret"), run.end("secret"))


def _mixed(run: str) -> bool:
    return any(c.isdigit() for c in run) and any(c.isalpha() for c in run)


def _is_credential(scheme: str, value: str) -> bool:
    """Tell whether the word after `Bearer` or `Basic` is a credential, not prose
    (`basic statistics`): Basic's is base64 of `user:password`; a bearer token is not a
    plain word.

    >>> _is_credential("Basic", "dXNlcjpwYXNz"), _is_credential("basic", "statistics")
    (True, False)
    >>> _is_credential("Bearer", "eyJhbGciOi1"), _is_credential("bearer", "tokens")
    (True, False)
    """
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return False
        return b":" in decoded
    return not (value.isalpha() and (value.islower() or value.istitle()))


def _claim(spans: Spans, start: int, end: int) -> None:
    value = spans.text[start:end]
    if value and value != REDACTED and not value.startswith("***"):
        spans.claim_secret(start, end, REDACTED)


def scrub_secrets(text: str) -> str:
    """Return `text` with every secret shape replaced by `*********(redacted)`.

    >>> scrub_secrets("jdbc:mysql://db:3306/x?user=etl&password=hunter2 GROUP BY key")
    'jdbc:mysql://db:3306/x?user=etl&password=*********(redacted) GROUP BY key'
    >>> scrub_secrets("curl -H 'Authorization: Bearer abc.def-123'")
    "curl -H 'Authorization: Bearer *********(redacted)'"
    """
    spans = Spans(text)
    claim_secrets(spans)
    return spans.render() if spans.items else text
