"""Error code -> exit status: the one table every door applies.

Exit statuses follow the reference `lcm` contract: 0 success, 1 internal failure,
2 invalid invocation, 3 something requested was not found, 4 config or backup
failures, 5 database open, query or lock failures.
"""

from __future__ import annotations

EXIT_STATUS: dict[str, int] = {
    "INVALID_ARGUMENT": 2,
    "INVALID_COMMAND": 2,
    "INVALID_SELECTOR": 2,
    "MISSING_SELECTOR": 2,
    "INVALID_TIME_FILTER": 2,
    "INVALID_CURSOR": 2,
    "INVALID_PATTERN": 2,
    "INVALID_REQUEST": 2,
    "REQUEST_TOO_LARGE": 2,
    "UNKNOWN_OPERATION": 2,
    "INVALID_INPUT": 2,
    "CONVERSATION_NOT_FOUND": 3,
    "SUMMARY_NOT_FOUND": 3,
    "DATABASE_NOT_FOUND": 3,
    "CONFIG_NOT_FOUND": 3,
    "CONFIG_KEY_NOT_FOUND": 3,
    "STATE_DIR_NOT_FOUND": 3,
    "SESSIONS_DIR_NOT_FOUND": 3,
    "BACKUP_NOT_FOUND": 3,
    "TRANSCRIPT_UNREADABLE": 3,
    "ARCHIVE_NOT_FOUND": 3,
    "FILE_NOT_FOUND": 3,
    "NOT_IN_SCOPE": 3,
    "PROMPT_NOT_FOUND": 3,
    "CONTROL_UNAVAILABLE": 3,
    "INPUT_NOT_FOUND": 3,
    "ROTATE_UNAVAILABLE": 3,
    "CONFIG_PARSE_FAILED": 4,
    "CONFIG_SHAPE_INVALID": 4,
    "CONFIG_VALIDATION_FAILED": 4,
    "CONFIG_INCLUDE_UNSUPPORTED": 4,
    "CONFIG_SYMLINK_UNSUPPORTED": 4,
    "CONFIG_BACKUP_FAILED": 4,
    "CONFIG_WRITE_FAILED": 4,
    "CONFIG_SCHEMA_NOT_FOUND": 4,
    "CONFIG_SCHEMA_INVALID": 4,
    "BACKUP_TARGET_EXISTS": 4,
    "BACKUP_TARGET_UNWRITABLE": 4,
    "BACKUP_NO_SPACE": 4,
    "BACKUP_FAILED": 4,
    "BACKUP_VERIFY_FAILED": 4,
    "TRANSCRIPT_CHANGED": 4,
    "ROTATE_FAILED": 4,
    "ARCHIVE_CORRUPT": 4,
    "STATE_CHANGED": 4,
    "TURN_ADVANCEMENT_CONFLICT": 4,
    "EXPORT_TARGET_EXISTS": 4,
    "EXPORT_WRITE_FAILED": 4,
    "PROMPT_UNREADABLE": 4,
    "PROMPT_WRITE_FAILED": 4,
    "DATABASE_OPEN_FAILED": 5,
    "DATABASE_BUSY": 5,
    "DATABASE_IN_USE": 5,
    "DATABASE_QUERY_FAILED": 5,
    "SERVE_SOCKET_IN_USE": 5,
    "SERVE_SOCKET_FAILED": 5,
    "SUMMARIZER_FAILED": 1,
    "INTERNAL_ERROR": 1,
}


def exit_status(code: str) -> int:
    """Exit status for an error code; unknown codes are internal failures (1)."""
    return EXIT_STATUS.get(code, 1)
