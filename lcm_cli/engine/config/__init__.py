"""The Lossless config: keys declared once, resolution, schema, openclaw.json, paths, and the config operations."""
