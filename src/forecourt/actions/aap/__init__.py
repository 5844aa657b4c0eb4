"""AAP v0.1 (Auto Agent Protocol, the A2A automotive retail profile) as gateway actions: the five skills
(:mod:`.skills`, with ``lead.submit`` in :mod:`.lead_submit` over the one lead intake), the translations between
Forecourt's records and AAP payloads (:mod:`.translate`), and dealer-agent discovery (:mod:`.discovery`)."""
