"""A small dealer-domain thesaurus for the lexical retrieval paths (built-in embedder and full text).

Buyers and owners say "courtesy car" where the documents say "loaner", "money back" where they say
"refund", "engine and transmission" where they say "powertrain". A lexical ranker cannot bridge
that by itself, so each group below maps its phrases onto one canonical term: the built-in
embedder replaces them (in documents and questions alike) and full-text queries are expanded with
the group's single words. A semantic embedder (the MiniLM extra) needs none of this.
"""

from __future__ import annotations

import re

from forecourt import caching

# canonical term: phrases that mean the same thing at a dealership (lower case, single spaces)
SYNONYMS: dict[str, tuple[str, ...]] = {
    "loaner": ("loaner", "loaners", "courtesy car", "courtesy vehicle", "rental car", "replacement car"),
    "refund": ("refund", "refunded", "refundable", "money back", "get back", "reimburse", "reimbursed"),
    "home": ("home", "house", "my door", "driveway"),
    "afterhours": ("after hours", "closed", "after closing", "key drop"),
    "paperwork": ("paperwork", "documents", "bring", "what to bring", "need to bring"),
    "certified": ("certified", "cpo", "certified pre owned", "certified used"),
    "used": ("used", "pre owned", "preowned", "second hand"),
    "return": ("return", "bring back", "send back", "give back"),
    "repair": ("repair", "repairs", "fix", "fixed", "fixing"),
    "warranty": ("warranty", "coverage", "covered", "guarantee"),
    "powertrain": ("powertrain", "engine and transmission", "drivetrain"),
    "elsewhere": ("elsewhere", "another dealer", "other dealer", "did not buy here", "didn t buy here"),
    "card": ("card", "cards", "credit card", "debit card"),
    "offer": ("offer", "quote", "appraisal", "valuation"),
    "text": ("text", "texts", "text messages", "sms"),
    "overnight": ("overnight", "for a day", "24 hour", "24 hours"),
    "testdrive": ("test drive", "test drives", "try it out", "try out", "try it"),
    "electric": ("electric", "ev", "evs", "electric car", "electric vehicle", "electric vehicles"),
    "charger": ("charger", "chargers", "charging station", "charging stations"),
    "hours": ("hours", "open", "opening", "what time", "close"),
    "weekend": ("weekend", "saturday", "sunday", "saturdays", "sundays"),
    "price": ("price", "cost", "costs", "pricing"),
    "financing": ("financing", "finance", "loan", "car loan", "credit application"),
    "contact": ("contact", "phone number", "phone", "telephone", "reach", "get in touch"),
    "delivery": ("delivery", "deliver", "drop off the car", "drop the car off", "bring the car"),
}

_PHRASE_TO_CANONICAL: dict[str, str] = {p: c for c, phrases in SYNONYMS.items() for p in phrases}
_PATTERN = re.compile(
    r"\b(" + "|".join(re.escape(p) for p in sorted(_PHRASE_TO_CANONICAL, key=lambda p: (-len(p), p))) + r")\b"
)


@caching.memo("adapters.knowledge.canonical_texts", 8192)
def canonicalize(text: str) -> str:
    """Lower-case ``text`` with punctuation as spaces and every known phrase replaced by its canonical term."""
    flat = " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())
    return _PATTERN.sub(lambda m: _PHRASE_TO_CANONICAL[m.group(1)], flat)


def expansions(text: str) -> list[str]:
    """Words of every synonym group the text mentions (for OR-ing into a full-text query)."""
    flat = " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())
    words: list[str] = []
    for match in _PATTERN.finditer(flat):
        canonical = _PHRASE_TO_CANONICAL[match.group(1)]
        for phrase in SYNONYMS[canonical]:
            words.extend(w for w in phrase.split() if w not in words)
    return words
