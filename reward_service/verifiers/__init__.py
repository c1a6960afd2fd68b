"""Pure verifiers: functions of (completion, reference, options) that import nothing of ours."""
