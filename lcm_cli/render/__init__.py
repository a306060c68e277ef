"""Rendering an envelope for a person or a program: JSON, tables, trees, TSV and progress."""
