"""Checks, repairs and cleaners for lcm.db: `lcm doctor`, `lcm doctor apply`, `lcm doctor clean`.

One module per check family (markers, dag, context, fts, conversations, maintenance,
storage); :mod:`lcm_cli.doctor.checks` lists every check with its stable id, severity and
fix, and the repair it carries (:mod:`lcm_cli.doctor.repairs`); :mod:`lcm_cli.doctor.scan`,
:mod:`lcm_cli.doctor.apply` and :mod:`lcm_cli.doctor.clean` are the operations.
"""
