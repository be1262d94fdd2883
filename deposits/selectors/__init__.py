"""The deposit store's reads: none of these modules writes a row.

`deposits`: one deposit, an owner's list, the records the API returns. `bags`: a bag, an
owner's bags, the conflict queue. `recall`: ranked recall with its flags (over `deposits.search`,
one backend per database). `hits`: the details every recall hit carries.
"""
