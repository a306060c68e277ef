"""Recall from the shell: grep, describe, expand, expand-query and export."""
