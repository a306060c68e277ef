"""Storage: connections, schema migrations and feature probes for lcm.db."""
