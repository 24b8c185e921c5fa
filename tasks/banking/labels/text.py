"""Word handling for the `match` labeller: tokens, a light stemmer, stopwords, a small thesaurus."""

from __future__ import annotations

import re

WORD = re.compile(r"[a-z]+")

# Function words, plus the generic verbs of requests ("get", "find out", "make sure", "update"):
# tool names use them too (get_…, find_…, update_…), where they would outweigh the real topic.
STOPWORDS = frozenset(
    """a about add after all also am an and any are as at be because before been being both but by
    can change check confirm could did do does doing find for from get gets got had has have having
    he her here hers him his how i if in into is it its just know let like look make me more most
    my myself need no nobody not now of off on once only or our out over please request review
    right same see set she should show so some such tell than that the their them then there these
    they this those through to too under understand until up update us very want was we were what
    when where whether which while who why will with would you your""".split()
)
# Words the stemmer must leave alone ("checking" is an account type, not a form of "check").
KEEP = frozenset({"checking", "savings", "business"})

# Irregular forms and everyday synonyms, mapped onto the words tool schemas tend to use.
THESAURUS = {
    "paid": "pay",
    "sent": "send",
    "owe": "loan",
    "owed": "loan",
    "lock": "freeze",
    "locked": "freeze",
    "block": "freeze",
    "blocked": "freeze",
    "suspend": "freeze",
    "hold": "freeze",
    "move": "transfer",
    "challenge": "dispute",
    "much": "balance",
    "whenever": "alert",
    "below": "low",
    "drop": "low",
    "notify": "alert",
    "notified": "alert",
    "notification": "alert",
    "reminder": "alert",
    "text": "sms",
    "cheque": "check",
    "euro": "eur",
    "euros": "eur",
    "pound": "gbp",
    "pounds": "gbp",
    "peso": "mxn",
    "pesos": "mxn",
    "yen": "jpy",
    "rupee": "inr",
    "rupees": "inr",
    "dollar": "usd",
    "dollars": "usd",
    "abroad": "travel",
    "trip": "travel",
    "zip": "postal",
    "phone": "mobile",
}


def stem(word: str) -> str:
    """Strip common English inflections: payments -> payment, transferring -> transfer."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            root = word[: -len(suffix)]
            # transferr -> transfer, stopp -> stop; keep -ll/-ss roots (bill, pass).
            if len(root) > 2 and root[-1] == root[-2] and root[-1] not in "lsz":
                root = root[:-1]
            return root
    if len(word) > 4 and word.endswith(("shes", "ches", "xes", "sses", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# General English only, nothing learnt from any labelled data: irregular past forms, the
# British spelling, and currency names onto the ISO codes tool enums use.
GENERAL_FORMS = {
    "paid": "pay", "sent": "send", "cheque": "check", "euro": "eur", "euros": "eur",
    "pound": "gbp", "pounds": "gbp", "peso": "mxn", "pesos": "mxn", "yen": "jpy",
    "rupee": "inr", "rupees": "inr", "dollar": "usd", "dollars": "usd",
}


def tokens(text: str, synonyms: dict[str, str] | None = None) -> list[str]:
    """Lower-case content words, split on anything not a letter (so snake_case splits too).

    `synonyms` maps words before and after stemming (default: the `match` THESAURUS).
    """
    table = THESAURUS if synonyms is None else synonyms
    out = []
    for raw in WORD.findall(text.lower()):
        if raw in STOPWORDS:
            continue
        word = table.get(raw, raw)
        if word not in KEEP:
            word = table.get(stem(word), stem(word))
        if word not in STOPWORDS and len(word) > 1:
            out.append(word)
    return out
