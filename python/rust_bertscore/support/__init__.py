"""Helpers below every stage: atomic file writes."""
