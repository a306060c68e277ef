"""Typer commands: thin doors over the operation registry."""
