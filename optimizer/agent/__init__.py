"""Agents, the episode loop, and the episode record with its metrics."""
