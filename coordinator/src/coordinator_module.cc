// Placeholder translation unit so the module builds before its code lands (issue 3).
