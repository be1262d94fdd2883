"""Who may do what, in one place: API keys for the API, roles for the dashboard.

`api_keys`: the API's bearer-key authentication and the checks every operation makes (a
permission, a user_id prefix, the unconfined admin). `roles`: the dashboard's reviewer and
operator roles, the view decorators and the frame's navigation. `logins`: the one write that
creates a login with its role (used by `create_login` and `ensure_admin`).

This package sits above `beliefs.models` (the keys, channels and tiers it reads) and below
every app's API and views.
"""
