"""Helpers below every stage: atomic file writes, bounded reads of outside files."""
