"""The kernel: errors, the operation registry, parameters, paging, time, tokens, identity, files. Imports nothing else in lcm_cli."""
