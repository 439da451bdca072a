"""The language server: on-save diagnostics, the optimize and spec actions, verified edits."""
