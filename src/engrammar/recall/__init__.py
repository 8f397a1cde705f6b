"""Recall: candidates, fusion, graph paths, scoring, tensions and formatting (pure code)."""
