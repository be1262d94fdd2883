"""The review pages of deposits, one module per page family, and what they share (`shared`).

`queue` (the conflict queue), `bag` (a bag and its Resolve), `deposit` (a deposit, Retract,
Erase), `recall` (the recall playground), `desk` (the review desk, Skip, Take over, Undo),
`resolved` (the resolutions list). Each imports `shared` and no other page's module.
"""
