"""SQL the ORM cannot say well: the bag rules as SQL expressions, the bulk insert statement.

`rules`: the bag rules of `deposits.domain.bags` as SQL (pinned to them by a property test).
`bulk`: many rows in one statement, in the form each database parses fastest.
"""
