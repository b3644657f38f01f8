"""Test and benchmark utilities shipped with the package: a scripted OpenAI-compatible server."""
