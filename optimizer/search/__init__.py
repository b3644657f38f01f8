"""Guideline search: proposals (LLM and deterministic), validation, tiered selection, rounds, resume."""
