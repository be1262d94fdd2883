"""SQL the ORM cannot say well, as deposits.sql keeps it.

`owners`: the owners list, one statement a page with its total.
"""
