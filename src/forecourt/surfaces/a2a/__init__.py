"""The A2A front door: one AAP v0.1 dealer agent per dealership (card, manifest, LLM guide, both bindings)."""
