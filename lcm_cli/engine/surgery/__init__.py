"""Summary surgery: rewrite, dissolve, transplant and graph a conversation's summary DAG.

Every write is a dry run by default; ``--apply`` writes under a backup (by default a change
backup of the rows it changes; ``--backup full`` takes an online copy first) in
``BEGIN IMMEDIATE`` transactions that re-check what the plan read, so a live writer
that got there first turns a unit into ``STATE_CHANGED`` rather than a mix. Ids, links
and derived totals stay as lossless-claw writes them (docs/reference/database.md §8).
"""
