"""Loopback fake servers speaking real providers' wire formats (Vertex AI, Triton/KServe v2, OpenAI)."""
