"""Outbound AAP: the client that calls a dealer agent, and the conformance checker built on it."""
