"""Operators' scripts that need no Django: the backup that is restored and compared (backup.py)."""
