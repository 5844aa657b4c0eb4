"""AAP v0.1 (Auto Agent Protocol, the A2A automotive retail profile): skills, schemas, ADF, the buyer-side client."""
