"""The sandbox: a local emulator of OpenAlex, Semantic Scholar, arXiv and an OpenAI-compatible
API over a seeded synthetic scholarly world. It is a test double, and says so in what it serves.
"""
