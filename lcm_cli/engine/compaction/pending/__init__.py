"""Summaries prepared off the turn path into lossless-claw 1.0's pending-summary tables.

``projection`` reads the context and derives 1.0's fingerprints; ``planner`` lays out
leaf and condensed nodes and picks a publish frontier; ``rows`` reads and writes the
four pending tables as 1.0's store does; ``publisher`` promotes a ready frontier into
the summary DAG in one transaction; ``coordinator`` runs one step (plan, prepare one
node with the model, or publish what is ready). See docs/engine.md.
"""
